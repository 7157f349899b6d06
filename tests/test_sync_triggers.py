"""What starts a sync: the push webhook (real HTTP on a local port), the scheduler, the folder
watcher, and the runner that keeps them to one sync at a time."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from eval.bench_sync import commit_files
from rag.embeddings import LocalMiniLM
from rag.store import Store
from sync.scheduler import SyncRunner, schedule_trigger, start_scheduler
from sync.status import read_status
from sync.watcher import watch_folder
from sync.webhook import webhook_route
from tests.conftest import make_settings
from tests.test_sync_support import new_repo, sync_settings

SECRET = "hook-s3cret"
PUSH = json.dumps({"ref": "refs/heads/main", "after": "0" * 40}).encode()


async def until(condition, timeout: float = 60.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "timed out"
        await asyncio.sleep(0.1)


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


async def test_webhook_starts_a_sync_only_with_a_valid_signature(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    c1 = commit_files(source, {"ops/oncall.md": "# On-call\n\nPages are answered within 15 minutes.\n"})
    settings = sync_settings(tmp_path, source, webhook_secret=SECRET, branch="main")
    runner = SyncRunner(settings, embedder)
    app, url = await serve(webhook_route(settings, runner.trigger))
    store = Store(settings.data_dir)
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
            await asyncio.sleep(0.3)
            assert runner.runs == 0 and not store.exists()

            async with http.post(url, data=PUSH, headers={"X-Hub-Signature-256": github_signature(PUSH),
                                                          "X-GitHub-Event": "push"}) as response:
                assert response.status == 202
            await until(lambda: read_status(store)["commit"] == c1)

            c2 = commit_files(source, {"ops/oncall.md": "# On-call\n\nPages are answered within 10 minutes.\n"})
            async with http.post(url, data=PUSH, headers={"X-Gitlab-Token": SECRET}) as response:
                assert response.status == 202
            await until(lambda: read_status(store)["commit"] == c2)
    finally:
        await app.cleanup()


async def test_webhook_without_a_secret_fails_closed(tmp_path: Path) -> None:
    triggered = []

    async def trigger() -> None:
        triggered.append(1)

    app, url = await serve(webhook_route(make_settings(tmp_path / "index"), trigger))
    try:
        async with aiohttp.ClientSession() as http:
            async with http.post(url, data=PUSH, headers={"X-Hub-Signature-256": github_signature(PUSH)}) as response:
                assert response.status == 503 and "DOCSBOT_WEBHOOK_SECRET" in (await response.json())["error"]
    finally:
        await app.cleanup()
    assert triggered == []


def test_schedule_is_an_interval_or_a_cron_expression_with_jitter(tmp_path: Path) -> None:
    interval = schedule_trigger(make_settings(tmp_path, sync_interval_minutes=7, sync_jitter_s=20))
    assert isinstance(interval, IntervalTrigger) and interval.interval.total_seconds() == 420 and interval.jitter == 20
    cron = schedule_trigger(make_settings(tmp_path, sync_cron="*/15 8-18 * * mon-fri"))
    assert isinstance(cron, CronTrigger) and str(cron.fields[6]) == "*/15" and cron.jitter == 30
    with pytest.raises(ValueError, match="5 fields"):
        schedule_trigger(make_settings(tmp_path, sync_cron="*/15 * *"))


async def test_scheduler_syncs_at_once_and_triggers_coalesce(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    c1 = commit_files(source, {"ops/oncall.md": "# On-call\n\nHand over on Mondays.\n"})
    settings = sync_settings(tmp_path, source, sync_interval_minutes=60)
    runner = SyncRunner(settings, embedder)
    scheduler = start_scheduler(settings, runner)
    try:
        await until(lambda: runner.last is not None)
        assert runner.last.commit_after == c1
    finally:
        scheduler.shutdown(wait=False)
    # Five triggers while idle-then-busy: one sync, plus one queued run for all the others.
    runs = runner.runs
    await asyncio.gather(*(runner.trigger() for _ in range(5)))
    assert runner.runs - runs == 2


async def test_watcher_reindexes_only_changed_files_of_a_local_folder(tmp_path: Path, embedder: LocalMiniLM) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Alpha\n\nThe alpha service restarts nightly at 02:00.\n")
    (docs / "b.md").write_text("# Beta\n\nThe beta queue drains every ten minutes.\n")
    settings = make_settings(tmp_path / "index", docs_dir=str(docs), default_level="team")
    runner = SyncRunner(settings, embedder)
    await runner.trigger()
    store = Store(settings.data_dir)
    assert runner.last.added == 2 and store.counts()["documents"] == 2
    stop = asyncio.Event()
    watcher = asyncio.create_task(watch_folder(docs, runner.trigger, 100, stop))
    try:
        await asyncio.sleep(0.5)  # the watcher is running
        calls = embedder.calls
        (docs / "b.md").write_text("# Beta\n\nThe beta queue drains every five minutes.\n")
        (docs / "c.md").write_text("# Gamma\n\nGamma backups are kept for 30 days.\n")
        await until(lambda: store.counts()["documents"] == 3 and runner.last.modified == 1)
        assert (runner.last.added, runner.last.unchanged) == (1, 1)
        assert embedder.calls - calls == 2  # b.md's new text and c.md; a.md untouched
        (docs / "a.md").unlink()
        await until(lambda: store.counts()["documents"] == 2)
        assert runner.last.deleted == 1
    finally:
        stop.set()
        await asyncio.wait_for(watcher, 10)
