"""After a sync that failed on a full disk, or whose worker died half-way, `docsbot status` says so
(issue 39 item 4): before, it went on saying "last sync: ok" from the sync before, and gave git's
return code (-25) as the cause. Real processes throughout: `docsbot sync --watch` workers, one
whose writes are capped by RLIMIT_FSIZE (a write past the cap fails as on a full disk: git's
checkout is killed by SIGXFSZ), one killed (SIGKILL, DOCSBOT_SYNC_KILL_AT) before it writes, and
`docsbot status` as an operator runs it."""
from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bot.docs_sync import in_words
from foundation.wiring import sync_config
from eval.repos import commit_files
from sync.status import load_status, render_status
from tests.support.settings import REPO, make_settings
from tests.support.sync import new_repo

LEASE_TTL_S = 2.0
FILE_CAP = 1 << 20  # bytes one file of the capped worker may reach (its state file stays under it)


def environment(tmp_path: Path, repo: Path) -> dict[str, str]:
    return {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO),
            "DOCSBOT_DATA_DIR": str(tmp_path / "data"), "DOCSBOT_REPO": str(repo), "DOCSBOT_DEFAULT_LEVEL": "team",
            "DOCSBOT_SYNC_LEASE_TTL_S": str(LEASE_TTL_S), "DOCSBOT_SYNC_LEASE_RENEW_S": "0.5",
            "DOCSBOT_SYNC_FETCH_RETRIES": "0", "DOCSBOT_METRICS_PORT": "0", "DOCSBOT_EMBEDDING_THREADS": "1"}


def docsbot(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "commands.cli", *args], env=env, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def worker(env: dict[str, str], cwd: Path, preexec: Callable[[], None] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "commands.cli", "sync", "--watch"], env=env, cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=preexec)


def status_until(env: dict[str, str], wanted: str, timeout_s: float) -> str:
    """`docsbot status` once it shows `wanted` (or the last one, when it never did)."""
    deadline = time.monotonic() + timeout_s
    while True:
        shown = docsbot(env, "status")
        if wanted in shown or time.monotonic() > deadline:
            return shown
        time.sleep(0.3)


def capped_files() -> None:
    """In the worker's process, before it starts: no file grows past FILE_CAP (EFBIG, like ENOSPC)."""
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_CAP, FILE_CAP))


def test_status_reports_a_worker_that_died_mid_sync_and_a_disk_full_failure(tmp_path: Path) -> None:
    repo = new_repo(tmp_path / "upstream")
    commit_files(repo, {"guide.md": "# Guide\n\nDeploys need a green build and one approval.\n"}, "docs")
    env = environment(tmp_path, repo)
    docsbot(env, "sync")
    assert "last sync: ok" in docsbot(env, "status")

    # A worker killed half-way (as by the OOM killer) never says how its sync ended.
    commit_files(repo, {"oncall.md": "# On call\n\nThe pager rotates every Monday.\n"}, "on call")
    died = worker({**env, "DOCSBOT_SYNC_KILL_AT": "before-write"}, tmp_path)
    output, _ = died.communicate(timeout=180)
    assert died.returncode == -signal.SIGKILL, output[-2000:]
    shown = status_until(env, "none running", LEASE_TTL_S + 10)
    assert "sync worker: none running" in shown, shown
    assert "last sync: ok" not in shown, shown
    assert "last sync: FAILED: the sync by " in shown and "stopped before it finished" in shown, shown
    assert "last successful sync: 20" in shown, shown
    holder = shown.split("the sync by ", 1)[1].split(" stopped")[0]
    status = load_status(sync_config(make_settings(tmp_path / "data", repo=str(repo))))
    assert status["stopped"] == holder and holder not in render_status(in_words(status))  # /docs status: admins only

    # A worker whose writes fail as on a full disk: the failure and its cause, while it runs...
    commit_files(repo, {"big.md": "# Big\n\n" + "Every line of this page is long enough to count. " * 50_000},
                 "a page over the cap")
    capped = worker(env, tmp_path, capped_files)
    try:
        shown = status_until(env, "last sync: FAILED at", 120)
        assert capped.poll() is None, capped.communicate()[0][-2000:]
        assert "git checkout failed: killed by SIGXFSZ (File size limit exceeded)" in shown, shown
        assert "sync worker: none running" not in shown and "stopped before it finished" not in shown, shown
    finally:
        capped.kill()
        capped.wait()
    # ...and once it is gone, no worker is said to run; the cause stays.
    shown = status_until(env, "none running", LEASE_TTL_S + 10)
    assert "sync worker: none running" in shown, shown
    assert "git checkout failed: killed by SIGXFSZ" in shown and "last sync: ok" not in shown, shown
