"""Replaying real history: nine commits of openshift/runbooks (tests/fixtures/runbooks-history),
synced incrementally and compared after every commit with a full rebuild at the same commit, on
each store (LanceDB, Postgres with pgvector). The stretch adds, edits and renames runbooks, has
two commits outside alerts/ (nothing to do), and ends with 15 files moved into per-operator
folders. `python -m eval bench-sync` replays the whole history of
../shared/corpora/openshift-runbooks the same way."""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

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
