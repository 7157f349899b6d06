"""`docsbot sync` against real git repositories made in a temp dir: renames, deletes, binary
files, level changes, rewritten history, a killed sync, the writer lease, fetch failures, the CLI."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from pydantic import SecretStr

from commands.cli import main
from foundation.wiring import rag_config, state_config, sync_config
from eval.repos import commit_files, index_rows, rebuild_at, run_git
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.levels import Level
from rag.store import WriteRefused
from rag.store.search import Store
from state.opening import open_state
from state.leases import Leases
from sync.errors import SyncBusy
from sync.lease import INDEX_WRITER
from sync.gitcmd import GitError
from sync.service import run_sync
from sync.status import load_status
from sync.workcopy import work_dir
from tests.support.settings import REPO
from tests.support.sync import assert_same_index, indexed_commit, new_repo, sync_settings

VACATION = """---
title: Vacation Policy
version: "3"
---
# Vacation Policy

## Allowance

Every employee gets 25 vacation days per calendar year. Unused days expire in March.

## Requests

Request time off in the HR portal at least two weeks ahead. Your manager approves it.
"""
EXPENSES = """---
title: Expenses
access: team
---
# Expenses

Submit receipts for travel and meals within 30 days. Meals are covered up to 60 EUR per day.
"""
DEPLOY = """# Deploy Policy

Deploys to production are frozen on Fridays after 14:00. Hotfixes need an approver from the on-call rota.
"""
ONCALL = """# On-call

The on-call engineer answers pages within 15 minutes and hands over on Mondays at 10:00.
"""
FILES = {"handbook/vacation.md": VACATION, "handbook/expenses.md": EXPENSES,
         "policies/deploy.md": DEPLOY, "ops/oncall.md": ONCALL}


def synced_equals_rebuild(settings, source: Path, commit_id: str, tmp: Path, embedder: LocalMiniLM) -> None:
    assert indexed_commit(settings.data_dir) == commit_id
    assert_same_index(settings.data_dir, rebuild_at(settings, source, commit_id, tmp / "ref", embedder))


def text_hashes(settings) -> set[str]:
    return {row["text_hash"] for row in index_rows(settings.data_dir)}


def test_edits_renames_deletes_binary_and_levels_converge(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    c1 = commit_files(source, FILES)
    assert run_sync(sync_config(settings), embedder).added == 4
    synced_equals_rebuild(settings, source, c1, tmp_path, embedder)

    # Rename with an edit in one section, and a delete: only the edited text is embedded.
    before = text_hashes(settings)
    edited = VACATION.replace("two weeks ahead.", "two weeks ahead, or one week for a single day.")
    c2 = commit_files(source, {"handbook/vacation.md": None, "handbook/time-off.md": edited, "ops/oncall.md": None})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.renamed, report.deleted, report.added) == ("incremental", 1, 1, 0)
    assert report.chunks_embedded == len(text_hashes(settings) - before) >= 1 and report.chunks_reused >= 1
    synced_equals_rebuild(settings, source, c2, tmp_path, embedder)

    # Deleted, then added back unchanged: nothing to embed.
    c3 = commit_files(source, {"ops/oncall.md": ONCALL})
    report = run_sync(sync_config(settings), embedder)
    assert (report.added, report.chunks_embedded) == (1, 0)
    synced_equals_rebuild(settings, source, c3, tmp_path, embedder)

    # A file turns binary (skipped with its reason, and out of the index: its old text is stale);
    # another's front matter lowers its level, which takes effect in the same sync.
    c4 = commit_files(source, {"policies/deploy.md": b"\x89PNG\r\n\x00\x00binary",
                         "handbook/expenses.md": EXPENSES.replace("access: team", "access: public")})
    report = run_sync(sync_config(settings), embedder)
    assert report.skipped == [("policies/deploy.md", "binary file")]
    rows = index_rows(settings.data_dir)
    assert "policies/deploy.md" not in {r["doc_path"] for r in rows}
    assert {r["access"] for r in rows if r["doc_path"] == "handbook/expenses.md"} == {"public"}
    synced_equals_rebuild(settings, source, c4, tmp_path, embedder)

    # An edit and its revert between two syncs: same text, but the last commit moved.
    commit_files(source, {"handbook/expenses.md": EXPENSES.replace("60 EUR", "70 EUR")})
    c6 = commit_files(source, {"handbook/expenses.md": EXPENSES.replace("access: team", "access: public")})
    report = run_sync(sync_config(settings), embedder)
    assert report.chunks_embedded == 0
    assert {r["commit"] for r in index_rows(settings.data_dir) if r["doc_path"] == "handbook/expenses.md"} == {c6}
    synced_equals_rebuild(settings, source, c6, tmp_path, embedder)

    # A path rule changes levels without any commit: every row is rewritten, nothing embedded.
    settings = settings.model_copy(update={"path_levels": {"handbook/**": Level.restricted}})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.reason, report.chunks_embedded) == ("reconcile", "index settings changed", 0)
    levels = {r["doc_path"]: r["access"] for r in index_rows(settings.data_dir)}
    assert levels["handbook/time-off.md"] == "restricted" and levels["handbook/expenses.md"] == "public"
    synced_equals_rebuild(settings, source, c6, tmp_path, embedder)


def test_a_worker_with_another_working_copy_continues_incrementally_but_not_after_docsbot_index(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    """The standby that takes over runs on another host: its working copy is elsewhere, and the
    diff from the indexed commit still applies. An index written by `docsbot index` does not."""
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source, work_dir=str(tmp_path / "host-a"))
    commit_files(source, FILES)
    run_sync(sync_config(settings), embedder)
    c2 = commit_files(source, {"ops/oncall.md": ONCALL.replace("15 minutes", "5 minutes")})
    standby = settings.model_copy(update={"work_dir": str(tmp_path / "host-b")})
    report = run_sync(sync_config(standby), embedder)
    assert (report.mode, report.modified, report.commit_after) == ("incremental", 1, c2)

    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    engine.index_folder(source / "handbook")  # someone indexed a folder into the same index
    commit_files(source, {"ops/oncall.md": ONCALL})
    report = run_sync(sync_config(standby), embedder)
    assert report.mode == "reconcile" and report.reason == "the index was last written from another folder"
    synced_equals_rebuild(standby, source, report.commit_after, tmp_path, embedder)


def test_rewritten_history_falls_back_to_reconcile(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    c1 = commit_files(source, FILES)
    commit_files(source, {"ops/oncall.md": ONCALL.replace("15 minutes", "10 minutes")})
    run_sync(sync_config(settings), embedder)

    run_git(source, "reset", "-q", "--hard", c1)  # force-push: the indexed commit leaves the branch
    rewritten = commit_files(source, {"ops/oncall.md": ONCALL.replace("Mondays", "Tuesdays")}, "rewritten")
    report = run_sync(sync_config(settings), embedder)
    assert report.mode == "reconcile" and "not an ancestor" in report.reason
    assert (report.modified, report.unchanged) == (1, 3)
    synced_equals_rebuild(settings, source, rewritten, tmp_path, embedder)

    # A fresh working copy after another force-push: the indexed commit is nowhere to be found.
    shutil.rmtree(work_dir(sync_config(settings)) / "repo")
    run_git(source, "reset", "-q", "--hard", c1)
    again = commit_files(source, {"policies/deploy.md": None}, "rewritten again")
    before = text_hashes(settings)
    report = run_sync(sync_config(settings), embedder)
    assert report.mode == "reconcile" and "not in the repository" in report.reason
    assert (report.modified, report.deleted) == (1, 1)  # oncall.md is back to its c1 text
    assert report.chunks_embedded == len(text_hashes(settings) - before) == 1
    synced_equals_rebuild(settings, source, again, tmp_path, embedder)


KILLED_LEASE_TTL_S = 1.0  # the writer lease of a killed sync expires after this


def sync_process(settings, kill_at: str = "") -> subprocess.CompletedProcess:
    """`docsbot sync` in a real child process, optionally killed (SIGKILL) at a point of the sync;
    the next sync waits for a killed one's writer lease to expire."""
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"), "PYTHONPATH": str(REPO),
           "DOCSBOT_DATA_DIR": settings.data_dir, "DOCSBOT_REPO": settings.repo.get_secret_value(),
           "DOCSBOT_DEFAULT_LEVEL": "team", "DOCSBOT_REPO_WEB": settings.repo_web,
           "DOCSBOT_SYNC_KILL_AT": kill_at, "DOCSBOT_SYNC_LEASE_TTL_S": str(KILLED_LEASE_TTL_S),
           "DOCSBOT_SYNC_LEASE_RENEW_S": "0.3"}
    return subprocess.run([sys.executable, "-m", "commands.cli", "sync"], env=env, cwd=Path(settings.data_dir).parent,
                          capture_output=True, text=True, timeout=120)


async def test_killed_sync_keeps_answering_and_the_next_sync_converges(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    c1 = commit_files(source, FILES)
    run_sync(sync_config(settings), embedder)
    c2 = commit_files(source, {"handbook/vacation.md": VACATION.replace("25 vacation days", "30 vacation days")})
    engine = Engine(rag_config(settings), Store(settings.data_dir, refresh_s=0), embedder, ExtractiveAnswerer())
    question = "How many vacation days does an employee get per year?"

    async def cited() -> tuple[str, str]:
        answer = await engine.ask(question, Level.team)
        assert answer.answered, answer.detail
        citation = next(c for c in answer.citations if c.doc_path == "handbook/vacation.md")
        return citation.commit, answer.answer

    # Killed after moving the working copy to the new head, before touching the index.
    done = sync_process(settings, kill_at="before-write")
    assert done.returncode == -signal.SIGKILL, done.stderr
    commit_id, text = await cited()
    assert commit_id == c1 and "25" in text
    assert indexed_commit(settings.data_dir) == c1

    # Killed after the chunks were written, before the commit was recorded.
    done = sync_process(settings, kill_at="after-write")
    assert done.returncode == -signal.SIGKILL, done.stderr
    commit_id, text = await cited()
    assert commit_id == c2 and "30" in text  # one atomic write: all of the new state
    assert indexed_commit(settings.data_dir) == c1  # not claimed yet

    report = run_sync(sync_config(settings), embedder)  # the next sync re-applies the diff; every vector is cached
    assert (report.commit_before, report.modified, report.chunks_embedded) == (c1, 1, 0)
    synced_equals_rebuild(settings, source, c2, tmp_path, embedder)


def test_a_second_sync_is_refused_while_another_process_holds_the_writer_lease(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source, sync_lease_ttl_s=2.0, sync_lease_renew_s=0.3)
    c1 = commit_files(source, {"ops/oncall.md": ONCALL})
    holder = subprocess.Popen(
        [sys.executable, "-c", "import time; from foundation.settings import Settings; "
         "from foundation.wiring import lease_config; "
         "from sync.lease import writer_lease\n"
         "with writer_lease(lease_config(Settings(_env_file=None))):\n    print('held', flush=True); time.sleep(60)"],
        env={**os.environ, "DOCSBOT_DATA_DIR": settings.data_dir, "DOCSBOT_SYNC_LEASE_TTL_S": "2",
             "DOCSBOT_SYNC_LEASE_RENEW_S": "0.3"},
        stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(SyncBusy, match=f":{holder.pid}:.* is writing the index"):
            run_sync(sync_config(settings), embedder)
        assert load_status(sync_config(settings))["last_sync"] is None  # nothing recorded or written
    finally:
        holder.kill()
        holder.wait()
    assert run_sync(sync_config(settings), embedder).commit_after == c1  # waits for the dead holder's lease to expire


def test_a_sync_that_lost_its_lease_mid_sync_stops_before_writing(tmp_path: Path, embedder: LocalMiniLM) -> None:
    """The holder is cut off while it embeds and a standby takes the lease: the sync's next
    commit is refused, the index keeps its last good state, and the embedding is not lost."""
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source, sync_lease_ttl_s=2.0, sync_lease_renew_s=0.3)
    c1 = commit_files(source, FILES)
    run_sync(sync_config(settings), embedder)
    before = Store(settings.data_dir).counts()
    c2 = commit_files(source, {f"archive/note-{i:03d}.md": f"# Note {i}\n\nMeeting {i} reviewed item {i * 7} and "
                                                         f"closed ticket {i * 13}.\n" for i in range(60)})
    outcome: list[BaseException | None] = []

    def sync() -> None:
        try:
            run_sync(sync_config(settings), embedder)
            outcome.append(None)
        except BaseException as exc:  # noqa: BLE001 (what the sync ended with is the assertion)
            outcome.append(exc)

    thread = threading.Thread(target=sync)
    thread.start()
    deadline = time.monotonic() + 120
    while load_status(sync_config(settings))["syncing"] is None:  # embedding has begun
        assert thread.is_alive() and time.monotonic() < deadline, outcome
        time.sleep(0.1)

    async def usurp() -> None:  # as if the holder's lease had expired and a standby took it
        db = await open_state(state_config(settings))
        try:
            assert await Leases(db, clock=lambda: time.time() + 3600).acquire(INDEX_WRITER, "standby", 7200)
        finally:
            await db.close()

    asyncio.run(usurp())
    thread.join(120)
    [error] = outcome
    assert isinstance(error, WriteRefused) and "no longer holds the index-writer lease" in str(error), error
    assert indexed_commit(settings.data_dir) == c1 and Store(settings.data_dir).counts() == before
    assert load_status(sync_config(settings))["last_sync"]["ok"] is False

    async def release() -> None:
        db = await open_state(state_config(settings))
        try:
            await Leases(db).release(INDEX_WRITER, "standby")
        finally:
            await db.close()

    asyncio.run(release())
    report = run_sync(sync_config(settings), embedder)
    assert (report.commit_after, report.added, report.chunks_embedded) == (c2, 60, 0)  # its vectors were kept


def test_fetch_failure_keeps_the_index_and_never_shows_the_token(
    tmp_path: Path, embedder: LocalMiniLM, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    c1 = commit_files(source, FILES)
    run_sync(sync_config(settings), embedder)
    before = load_status(sync_config(settings))

    token = "ghp_s3cretT0ken"
    remote = f"https://docsbot:{token}@127.0.0.1:9/team/docs.git"  # nothing listens on port 9
    failing = settings.model_copy(update={"repo": SecretStr(remote), "sync_fetch_retries": 1})
    with pytest.raises(GitError) as failure:
        run_sync(sync_config(failing), embedder)
    status = load_status(sync_config(settings))
    assert status["last_sync"]["ok"] is False and "git fetch failed" in status["last_sync"]["error"]
    assert (status["commit"], status["documents"], status["chunks"]) == (c1, before["documents"], before["chunks"])
    assert "retry 1/1" in caplog.text  # retried with backoff before giving up

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCSBOT_DATA_DIR", settings.data_dir)
    monkeypatch.setenv("DOCSBOT_SYNC_FETCH_RETRIES", "0")
    assert main(["sync", "--repo", remote]) == 2
    err = capsys.readouterr().err
    assert err.startswith("docsbot: error: git fetch failed") and len(err.strip().splitlines()) == 1
    for text in (str(failure.value), json.dumps(load_status(sync_config(settings))), caplog.text, err):
        assert token not in text

    missing_branch = settings.model_copy(update={"branch": "no-such-branch"})
    with pytest.raises(GitError, match="no-such-branch"):
        run_sync(sync_config(missing_branch), embedder)
    assert indexed_commit(settings.data_dir) == c1


def test_cli_sync_and_status_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    source = new_repo(tmp_path / "upstream")
    c1 = commit_files(source, {"ops/oncall.md": ONCALL,
                               "notes/todo.txt": "Rotate the on-call calendar every quarter.\n"})
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCSBOT_DATA_DIR", str(tmp_path / "index"))
    assert main(["sync", "--repo", str(source), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) >= {"commit_before", "commit_after", "added", "modified", "deleted", "renamed", "unchanged",
                           "skipped", "chunks_embedded", "chunks_reused", "seconds"}
    assert (report["commit_before"], report["commit_after"], report["added"]) == (None, c1, 2)
    assert report["chunks_embedded"] == 2 and report["skipped"] == []
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["commit"], status["documents"], status["last_sync"]["ok"]) == (c1, 2, True)
    assert status["commit_date"] == run_git(source, "show", "-s", "--format=%cI", c1)
