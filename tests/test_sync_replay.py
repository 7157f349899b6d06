"""Replaying real history: nine commits of openshift/runbooks (tests/fixtures/runbooks-history),
synced incrementally and compared after every commit with a full rebuild at the same commit, on
each store (LanceDB, Postgres with pgvector). The stretch adds, edits and renames runbooks, has
two commits outside alerts/ (nothing to do), and ends with 15 files moved into per-operator
folders. `python -m eval bench-sync` replays the whole history of
../shared/corpora/openshift-runbooks the same way. With a sources file, the runbooks and a
handbook of its own history change in turn, and after every commit the shared index equals a
first sync of both sources into an empty index."""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from pydantic import SecretStr

from foundation.wiring import rag_config, sync_config
from eval.repos import rebuild_at, run_git
from rag import open_index
from rag.embeddings import LocalMiniLM
from sync.service import run_sync
from tests.support.pgvector import index_database
from tests.support.sync import assert_same_index, new_repo, sync_settings

HISTORY = Path(__file__).parent / "fixtures" / "runbooks-history" / "history.fi"


def history_repo(path: Path) -> list[str]:
    """The fixture's commits imported into a new repository at `path`: their ids, oldest first."""
    repo = new_repo(path)
    with HISTORY.open("rb") as stream:
        subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, stdin=stream, check=True)
    return run_git(repo, "rev-list", "--reverse", "master").split()


@pytest.fixture
def ref_url(index_url: str, request: pytest.FixtureRequest) -> Iterator[str]:
    """Where the rebuilt reference goes: beside the synced index on the same store."""
    if not index_url:
        yield ""
        return
    with index_database(request.getfixturevalue("pgvector_server")) as url:
        yield url


def test_replay_matches_full_rebuild_after_every_commit(tmp_path: Path, embedder: LocalMiniLM, index_url: str,
                                                        ref_url: str) -> None:
    source = tmp_path / "upstream"
    commits = history_repo(source)
    assert len(commits) == 9
    settings = sync_settings(tmp_path, source, repo_subdir="alerts", repo_web="https://github.com/openshift/runbooks",
                             index_url=index_url or None)

    run_git(source, "checkout", "-q", "-B", "master", commits[0])
    first = run_sync(sync_config(settings), embedder)
    assert (first.mode, first.commit_after) == ("reconcile", commits[0])
    if not ref_url:
        # The reference starts as a copy, so the 69 starting chunks are embedded once, not twice;
        # each rebuild below still rewrites every row, and embeds every new text on its own.
        shutil.copytree(settings.data_dir, tmp_path / "ref" / "index")

    seen: dict[str, int] = {"added": 0, "modified": 0, "renamed": 0}
    for commit_id in commits[1:]:
        run_git(source, "checkout", "-q", "-B", "master", commit_id)  # upstream moves on
        calls = embedder.calls
        report = run_sync(sync_config(settings), embedder)
        assert report.mode in ("incremental", "unchanged")
        assert report.commit_after == commit_id
        assert report.chunks_embedded == embedder.calls - calls
        for key in seen:
            seen[key] += getattr(report, key)
        synced = open_index(rag_config(settings).index)  # opened now: it sees the sync's last commit
        assert_same_index(synced, rebuild_at(settings, source, commit_id, tmp_path / "ref", embedder, ref_url))
    # The stretch really exercised adds, edits and renames (the 15-file move is one commit).
    assert seen["added"] >= 4 and seen["modified"] >= 3 and seen["renamed"] >= 15


# A second source's own history, replayed in turn with the runbooks': adds, an edit, a rename, a delete.
HANDBOOK_STEPS: list[dict[str, str | None]] = [
    {"README.md": "# Handbook\n\nHow the team works.\n", "people/leave.md": "# Leave\n\nBook holidays in HR.\n"},
    {"people/leave.md": "# Leave\n\nBook holidays in Workday, a month ahead.\n"},
    {"people/leave.md": None, "people/time-off.md": "# Leave\n\nBook holidays in Workday, a month ahead.\n"},
    {"README.md": None, "ops/oncall.md": "# On call\n\nSwap shifts in the rota before leave.\n"},
]


def handbook_commit(repo: Path, files: dict[str, str | None]) -> str:
    for name, text in files.items():
        if text is None:
            run_git(repo, "rm", "-q", name)
        else:
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            (repo / name).write_text(text)
    run_git(repo, "add", "-A")
    run_git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "step")
    return run_git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.timeout(600)  # eleven turns, each compared with a first sync of both sources (~75 chunks embedded)
def test_two_sources_changing_in_turn_match_a_full_sync_from_nothing_after_every_commit(
        tmp_path: Path, embedder: LocalMiniLM, index_url: str, request: pytest.FixtureRequest) -> None:
    from sync.source_index import sources_meta
    from tests.test_sync_sources import settings_for, write_sources

    runbooks, handbook = tmp_path / "runbooks", new_repo(tmp_path / "handbook")
    commits = history_repo(runbooks)
    run_git(runbooks, "checkout", "-q", "-B", "master", commits[0])
    run_git(handbook, "checkout", "-q", "-b", "master")
    handbook_commit(handbook, HANDBOOK_STEPS[0])
    sources = write_sources(tmp_path / "sources.toml", [
        {"name": "runbooks", "repo": str(runbooks), "repo_subdir": "alerts", "default_level": "public",
         "repo_web": "https://github.com/openshift/runbooks"},
        {"name": "handbook", "repo": str(handbook), "default_level": "team",
         "repo_web": "https://git.example.com/acme/handbook"}])
    settings = settings_for(tmp_path, sources).model_copy(update={"index_url": SecretStr(index_url) if index_url
                                                                  else None})
    run_sync(sync_config(settings), embedder)
    # runbooks moves, then the handbook, in turn, until both histories are replayed
    turns = [("runbooks", c) for c in commits[1:]]
    for i, step in enumerate(HANDBOOK_STEPS[1:]):
        turns.insert(2 * i + 1, ("handbook", step))
    for n, (name, step) in enumerate(turns):
        if name == "runbooks":
            run_git(runbooks, "checkout", "-q", "-B", "master", str(step))
        else:
            handbook_commit(handbook, step)  # type: ignore[arg-type]
        report = run_sync(sync_config(settings), embedder)
        assert report.sources[name]["mode"] in ("incremental", "unchanged")
        other = "handbook" if name == "runbooks" else "runbooks"
        assert report.sources[other]["mode"] == "unchanged" and report.sources[other]["chunks_embedded"] == 0
        with ExitStack() as stack:  # the reference: a first sync of both sources into an empty index
            ref_url = (stack.enter_context(index_database(request.getfixturevalue("pgvector_server")))
                       if index_url else None)
            fresh = settings.model_copy(update={"data_dir": str(tmp_path / f"ref{n}"),
                                                "index_url": SecretStr(ref_url) if ref_url else None})
            run_sync(sync_config(fresh), embedder)
            synced, rebuilt = open_index(rag_config(settings).index), open_index(rag_config(fresh).index)
            assert_same_index(synced, rebuilt)
            assert ({k: v["commit"] for k, v in sources_meta(synced.meta()).items()}
                    == {k: v["commit"] for k, v in sources_meta(rebuilt.meta()).items()})
    assert {p.split(":")[0] for p in open_index(rag_config(settings).index).doc_hashes()} == {"runbooks", "handbook"}
