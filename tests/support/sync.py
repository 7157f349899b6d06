"""Helpers for the sync tests: real git repositories in a temp dir, and the
comparison of an incrementally synced index with a full rebuild (eval/repos.py: shared with the benchmark)."""
from __future__ import annotations

from pathlib import Path

from foundation.settings import Settings
from eval.repos import index_differences, index_rows, opened, run_git
from rag import Index
from tests.support.settings import make_settings


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    run_git(path, "init", "-q")
    return path


def sync_settings(tmp: Path, repo: Path | str, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "repo": str(repo), "default_level": "team", "repo_web": "https://git.example.com/team/docs",
        "sync_fetch_retries": 0, "sync_retry_backoff_s": 0.01,
    }
    values.update(overrides)
    return make_settings(tmp / "index", **values)


def assert_same_index(synced: Index | Path | str, rebuilt: Index | Path | str) -> None:
    """Same chunk ids, texts, metadata and vectors (to float tolerance)."""
    assert index_rows(synced), "empty index"
    assert index_differences(synced, rebuilt) == []


def indexed_commit(index: Index | str) -> str | None:
    """The commit the index (or its folder or bucket URI) was last synced at."""
    return opened(index).meta().get("commit")
