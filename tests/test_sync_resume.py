"""A first sync killed half-way (SIGKILL, a real `docsbot sync` process) resumes: the vectors it
saved on the way are not embedded again, and the index only appears once a sync completes.
While it runs, `docsbot status` says how far it got (from the state store, as on any host)."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from foundation.wiring import state_config, sync_config
from eval.repos import commit_files, run_git
from rag.store.search import Store
from state.opening import open_state
from state.sync_status import SyncProgressRow
from sync.status import load_status, render_status
from tests.support.settings import REPO, SAMPLE_DOCS
from tests.support.sync import new_repo, sync_settings

LEASE_TTL_S = 2.0


def docs_repo(path: Path) -> Path:
    """The sample docs (docs-sync/, ~200 chunks: a few saves to the vector cache before half-way,
    on a fast or a busy machine) committed to a new repository."""
    repo = new_repo(path)
    shutil.copytree(SAMPLE_DOCS, repo, dirs_exist_ok=True)
    commit_files(repo, {}, "docs")
    return repo


def sync_command(settings) -> tuple[list[str], dict[str, str]]:
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO),
           "DOCSBOT_DATA_DIR": settings.data_dir, "DOCSBOT_REPO": settings.repo.get_secret_value(),
           "DOCSBOT_DEFAULT_LEVEL": "team",
           # The killed sync's writer lease expires after this (a real worker's standby waits as long).
           "DOCSBOT_SYNC_LEASE_TTL_S": str(LEASE_TTL_S), "DOCSBOT_SYNC_LEASE_RENEW_S": "0.5",
           # One thread: ~15 s of embedding, so the kill lands well before the end although the
           # progress row seen is up to 1 s old (with both cores it once finished in between).
           "DOCSBOT_EMBEDDING_THREADS": "1", "DOCSBOT_EMBEDDING_SAVE_S": "1"}
    return [sys.executable, "-m", "commands.cli", "sync", "--json"], env


def progress_row(settings) -> SyncProgressRow | None:
    """The progress row itself, whoever wrote it (status ignores one whose writer died)."""
    async def read() -> SyncProgressRow | None:
        db = await open_state(state_config(settings))
        try:
            async with db.begin() as session:
                return await session.get(SyncProgressRow, "index")
        finally:
            await db.close()

    return asyncio.run(read())


def test_sync_killed_at_half_embeds_only_the_rest(tmp_path: Path) -> None:
    settings = sync_settings(tmp_path, docs_repo(tmp_path / "upstream"))
    command, env = sync_command(settings)
    first = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 240
        status: dict = {}
        progress = None
        while time.monotonic() < deadline and first.poll() is None:
            status = load_status(sync_config(settings))
            progress = status["syncing"]
            if progress and progress["total"] and progress["done"] >= progress["total"] / 2:
                break
            time.sleep(0.2)
        assert first.poll() is None, "the sync ended before it was half-way: " + first.stderr.read().decode()[-500:]
        os.kill(first.pid, signal.SIGKILL)
    finally:
        first.kill()
        first.wait()
    killed = time.monotonic()
    total = progress["total"]
    assert total >= 100 and progress["done"] < total, progress
    assert f"syncing: {progress['done']:,} / {total:,} chunks embedded" in render_status(status)
    assert "last sync: never" not in render_status(status)
    assert not Store(settings.data_dir).exists()  # nothing half-built is served
    assert progress_row(settings) is not None  # left behind by the killed writer...
    while load_status(sync_config(settings))["syncing"] is not None:  # ...and ignored once its lease expired
        assert time.monotonic() - killed < LEASE_TTL_S + 2, "the dead writer's progress is still shown"
        time.sleep(0.2)

    done = subprocess.run(command, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout)
    assert 0 < report["chunks_embedded"] <= 0.55 * total, (report["chunks_embedded"], total)
    assert report["chunks_embedded"] <= total - progress["done"]  # what was saved is never embedded again
    assert Store(settings.data_dir).counts()["chunks"] == report["chunks_embedded"] + report["chunks_reused"]
    assert progress_row(settings) is None  # deleted at the end


def test_index_of_a_git_work_tree_records_its_commit(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "docs")
    commit_files(repo, {"guide.md": "# Guide\n\nDeploys need a green build and one approval.\n"})
    head = run_git(repo, "rev-parse", "HEAD")
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO),
           "DOCSBOT_DATA_DIR": str(tmp_path / "index")}

    def docsbot(*args: str) -> str:
        done = subprocess.run([sys.executable, "-m", "commands.cli", *args], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    docsbot("index", "--docs", str(repo))
    status = json.loads(docsbot("status", "--json"))
    assert status["commit"] == head and status["commit_date"] and status["syncing"] is None
    (repo / "guide.md").write_text("# Guide\n\nDeploys need two approvals.\n")
    docsbot("index", "--docs", str(repo))
    assert json.loads(docsbot("status", "--json"))["commit"] == head + "+dirty"
    assert f"indexed commit: {head[:12]}+dirty" in docsbot("status")
