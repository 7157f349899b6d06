"""Real git repositories and indexes built from them, for `eval bench-sync` and the sync tests:
run git, commit files, rebuild an index at a commit, and compare two indexes row by row."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
from pydantic import SecretStr

from foundation.settings import Settings
from foundation.wiring import lease_config, rag_config
from rag import Embedder, Engine, ExtractiveAnswerer, Index, IndexConfig, open_index
from sync.folder import index_folder

GIT_USER = ("-c", "user.name=Docs Writer", "-c", "user.email=docs@example.com", "-c", "init.defaultBranch=main")


def run_git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *GIT_USER, *args], cwd=repo, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def commit_files(repo: Path, files: dict[str, str | bytes | None], message: str = "docs") -> str:
    """Write (text or bytes) or delete (None) files, commit everything, return the commit id."""
    for rel, content in files.items():
        target = repo / rel
        if content is None:
            target.unlink()
        elif isinstance(content, bytes):
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(content)
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return run_git(repo, "rev-parse", "HEAD")


def rebuild_at(settings: Settings, source: Path, commit: str, dest: Path, embedder: Embedder,
               ref_url: str = "") -> Index:
    """A full `docsbot index` of a clone of `source` checked out at `commit`, into dest/index, or
    into the database at `ref_url` when given (every row rewritten; text already in the
    reference's own vector cache is not embedded again)."""
    clone = dest / "clone"
    if not clone.exists():
        subprocess.run(["git", "clone", "-q", str(source), str(clone)], check=True)
    run_git(clone, "fetch", "-q", "origin", "+refs/heads/*:refs/remotes/origin/*")
    run_git(clone, "checkout", "-q", "--force", "--detach", commit)
    url = SecretStr(ref_url) if ref_url else None
    own = settings.model_copy(update={"data_dir": str(dest / "index"), "index_url": url})
    config = rag_config(own)
    engine = Engine(config, open_index(config.index), embedder, ExtractiveAnswerer())
    index_folder(engine, lease_config(own), clone / settings.repo_subdir)
    return engine.store


def opened(index: Index | Path | str) -> Index:
    """An index, or the LanceDB folder or URI of one, opened."""
    return open_index(IndexConfig(str(index), "", 0.0, 0)) if isinstance(index, (Path, str)) else index


def index_rows(index: Index | Path | str) -> list[dict]:
    """Every chunk's whole row, vector included, by chunk id."""
    return opened(index).all_rows().to_pylist()


def index_differences(synced: Index | Path | str, rebuilt: Index | Path | str, atol: float = 1e-5) -> list[str]:
    """How two indexes differ: chunk ids, any column, or vectors beyond float tolerance (the model
    batches texts differently in two runs). Empty when they are the same."""
    mine, theirs = index_rows(synced), index_rows(rebuilt)
    ids_a, ids_b = [r["chunk_id"] for r in mine], [r["chunk_id"] for r in theirs]
    if ids_a != ids_b:
        return [f"chunk ids: {len(set(ids_a) - set(ids_b))} only synced, {len(set(ids_b) - set(ids_a))} only rebuilt"]
    found = []
    for a, b in zip(mine, theirs):
        va, vb = np.asarray(a.pop("vector")), np.asarray(b.pop("vector"))
        columns = [k for k in a if a[k] != b[k]]
        if columns:
            found.append(f"{a['chunk_id']}: {', '.join(columns)} differ")
        elif not np.allclose(va, vb, atol=atol):
            found.append(f"{a['chunk_id']}: vector differs by {float(np.abs(va - vb).max()):.2e}")
    return found
