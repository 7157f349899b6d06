"""What starts a sync: the push webhook (real HTTP on a local port), the scheduler and the folder
watcher all record sync requests, which the sync worker holding the writer lease runs."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from foundation.settings import Settings
from foundation.wiring import state_config, sync_config
from eval.repos import commit_files
from rag.embeddings import LocalMiniLM
from rag.store.search import Store
from state.opening import open_state
from state.sync_requests import SyncRequests
from sync.scheduler import schedule_trigger
from sync.webhook import webhook_route
from sync.worker import SyncWorker
from tests.support.settings import make_settings
from tests.support.sync import indexed_commit, new_repo, sync_settings
from tests.support.waiting import until

SECRET = "hook-s3cret"
PUSH = json.dumps({"ref": "refs/heads/main", "after": "0" * 40}).encode()


@asynccontextmanager
async def running_worker(
    settings: Settings, embedder: LocalMiniLM, watch: Path | None = None
) -> AsyncIterator[SyncWorker]:
    db = await open_state(state_config(settings))
    worker = SyncWorker(sync_config(settings), db, embedder, watch)
    stop = asyncio.Event()
    task = asyncio.create_task(worker.run(stop))
    try:
        yield worker
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
        await db.close()


async def serve(route: web.RouteDef) -> tuple[web.AppRunner, str]:
    app = web.Application()
    app.add_routes([route])
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}/hooks/git"


def github_signature(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


async def test_webhook_requests_a_sync_only_with_a_valid_signature(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    c1 = commit_files(source, {"ops/oncall.md": "# On-call\n\nPages are answered within 15 minutes.\n"})
    settings = sync_settings(tmp_path, source, webhook_secret=SECRET, branch="main", sync_interval_minutes=60)
    db = await open_state(state_config(settings))
    requests = SyncRequests(db)
    app, url = await serve(webhook_route(sync_config(settings), lambda: requests.request("webhook")))
    store = Store(settings.data_dir, refresh_s=0)
    try:
        async with aiohttp.ClientSession() as http:
            refused = [
                {"X-Hub-Signature-256": github_signature(PUSH, "wrong-secret")},
                {"X-Hub-Signature-256": github_signature(PUSH + b" ")},
                {"X-Gitlab-Token": "wrong-secret"},
                {},
            ]
            for headers in refused:
                async with http.post(url, data=PUSH, headers=headers) as response:
                    assert response.status == 401
            async with http.post(url, data=json.dumps({"ref": "refs/heads/other"}).encode(),
                                 headers={"X-Gitlab-Token": SECRET}) as response:
                assert response.status == 202 and "ignored" in await response.json()
            assert await requests.pending() == 0

            async with http.post(url, data=PUSH, headers={"X-Hub-Signature-256": github_signature(PUSH),
                                                          "X-GitHub-Event": "push"}) as response:
                assert response.status == 202 and await response.json() == {"sync": "requested"}
            assert await requests.pending() == 1  # recorded before the answer; nothing synced here
            assert not store.exists()
            async with running_worker(settings, embedder) as worker:
                await until(lambda: indexed_commit(store) == c1)
                c2 = commit_files(source, {"ops/oncall.md": "# On-call\n\nPages are answered within 10 minutes.\n"})
                async with http.post(url, data=PUSH, headers={"X-Gitlab-Token": SECRET}) as response:
                    assert response.status == 202
                await until(lambda: indexed_commit(store) == c2)
                assert worker.runs <= 3  # the first request and the schedule's were folded into one run
    finally:
        await app.cleanup()
        await db.close()


async def test_a_webhook_that_cannot_be_recorded_fails_so_the_git_host_redelivers(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "index", webhook_secret=SECRET, database_url="postgresql://nobody@127.0.0.1:9/x")

    async def record() -> None:
        db = await open_state(state_config(settings))  # the state store is down
        await SyncRequests(db).request("webhook")

    app, url = await serve(webhook_route(sync_config(settings), record))
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(url, data=PUSH, headers={"X-Gitlab-Token": SECRET}) as response:
                assert response.status == 503 and "redeliver" in (await response.json())["error"]
    finally:
        await app.cleanup()


async def test_webhook_without_a_secret_fails_closed(tmp_path: Path) -> None:
    triggered = []

    async def trigger() -> None:
        triggered.append(1)

    app, url = await serve(webhook_route(sync_config(make_settings(tmp_path / "index")), trigger))
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(url, data=PUSH, headers={"X-Hub-Signature-256": github_signature(PUSH)}) as response:
                assert response.status == 503 and "DOCSBOT_WEBHOOK_SECRET" in (await response.json())["error"]
    finally:
        await app.cleanup()
    assert triggered == []


def test_schedule_is_an_interval_or_a_cron_expression_with_jitter(tmp_path: Path) -> None:
    interval = schedule_trigger(sync_config(make_settings(tmp_path, sync_interval_minutes=7, sync_jitter_s=20)))
    assert isinstance(interval, IntervalTrigger) and interval.interval.total_seconds() == 420 and interval.jitter == 20
    cron = schedule_trigger(sync_config(make_settings(tmp_path, sync_cron="*/15 8-18 * * mon-fri")))
    assert isinstance(cron, CronTrigger) and str(cron.fields[6]) == "*/15" and cron.jitter == 30
    with pytest.raises(ValueError, match="5 fields"):
        schedule_trigger(sync_config(make_settings(tmp_path, sync_cron="*/15 * *")))


async def test_the_worker_syncs_at_once_and_folds_requests_into_one_more_run(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    source = new_repo(tmp_path / "upstream")
    c1 = commit_files(source, {"ops/oncall.md": "# On-call\n\nHand over on Mondays.\n"})
    settings = sync_settings(tmp_path, source, sync_interval_minutes=60)
    async with running_worker(settings, embedder) as worker:
        await until(lambda: worker.last is not None)  # the schedule fires once at start
        assert worker.last.commit_after == c1 and worker.runs == 1
        c2 = commit_files(source, {"ops/oncall.md": "# On-call\n\nHand over on Tuesdays.\n"})
        await asyncio.gather(*(worker.requests.request("command") for _ in range(5)))
        await until(lambda: worker.last.commit_after == c2)
        while await worker.requests.pending():
            await asyncio.sleep(0.1)
        assert worker.runs <= 3  # five requests: one run, or two when a sync started between them


async def test_the_watcher_reindexes_only_changed_files_of_a_local_folder(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe alpha service restarts nightly at 02:00.\n")
    (docs / "b.md").write_text("# Beta\n\nThe beta queue drains every ten minutes.\n")
    settings = make_settings(tmp_path / "index", docs_dir=str(docs), default_level="team", watch_debounce_ms=100,
                             sync_interval_minutes=60)
    store = Store(settings.data_dir, refresh_s=0)
    async with running_worker(settings, embedder, watch=docs) as worker:
        await until(lambda: worker.last is not None)
        assert worker.last.added == 2 and store.counts()["documents"] == 2
        await asyncio.sleep(0.5)  # the watcher is running
        calls = embedder.calls
        (docs / "b.md").write_text("# Beta\n\nThe beta queue drains every five minutes.\n")
        (docs / "c.md").write_text("# Gamma\n\nGamma backups are kept for 30 days.\n")
        await until(lambda: store.counts()["documents"] == 3 and worker.last.modified == 1)
        assert (worker.last.added, worker.last.unchanged) == (1, 1)
        assert embedder.calls - calls == 2  # b.md's new text and c.md; a.md untouched
        (docs / "a.md").unlink()
        await until(lambda: store.counts()["documents"] == 2)
        await until(lambda: worker.last.deleted == 1)
