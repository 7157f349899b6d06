"""Replaying real history: the openshift/runbooks repository, commit by commit, synced
incrementally and compared after every commit with a full rebuild at the same commit."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from docsbot.wiring import sync_config
from eval.bench_sync import rebuild_at, run_git
from rag.embeddings import LocalMiniLM
from sync.service import run_sync
from tests.support.sync import BUNDLE, assert_same_index, sync_settings
# commits outside alerts/ (nothing to do), and 15 files moved into a per-operator folder.
START, STOP = 8, 16


def first_parent_commits() -> list[str]:
    lines = (BUNDLE / "commits_first_parent.jsonl").read_text().splitlines()
    return [json.loads(line)["commit"] for line in lines]


def test_replay_matches_full_rebuild_after_every_commit(tmp_path: Path, embedder: LocalMiniLM) -> None:
    commits = first_parent_commits()
    source = tmp_path / "upstream"
    subprocess.run(["git", "clone", "-q", str(BUNDLE / "openshift-runbooks.bundle"), str(source)], check=True)
    settings = sync_settings(tmp_path, source, repo_subdir="alerts", repo_web="https://github.com/openshift/runbooks")

    run_git(source, "checkout", "-q", "-B", "master", commits[START])
    first = run_sync(sync_config(settings), embedder)
    assert (first.mode, first.commit_after) == ("reconcile", commits[START])
    # The reference starts as a copy, so the 69 starting chunks are embedded once, not twice; each
    # rebuild below still rewrites every row, and embeds every new text on its own.
    shutil.copytree(settings.data_dir, tmp_path / "ref" / "index")

    seen: dict[str, int] = {"added": 0, "modified": 0, "renamed": 0}
    for commit_id in commits[START + 1:STOP + 1]:
        run_git(source, "checkout", "-q", "-B", "master", commit_id)  # upstream moves on
        calls = embedder.calls
        report = run_sync(sync_config(settings), embedder)
        assert report.mode in ("incremental", "unchanged")
        assert report.commit_after == commit_id
        assert report.chunks_embedded == embedder.calls - calls
        for key in seen:
            seen[key] += getattr(report, key)
        assert_same_index(settings.data_dir, rebuild_at(settings, source, commit_id, tmp_path / "ref", embedder))
    # The stretch really exercised adds, edits and renames (the 15-file move is one commit).
    assert seen["added"] >= 4 and seen["modified"] >= 3 and seen["renamed"] >= 15
