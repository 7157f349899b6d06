"""The sync worker (`docsbot sync --watch`, and in-process under `docsbot run`): the only writer
of the index.

It waits for the index-writer lease (a second worker is a hot standby), then, while it holds
it, runs one sync per batch of sync requests. Every trigger is a request in the state store:
the webhook and `/docs sync` on any replica, the schedule and the file watcher here. Requests
recorded during a sync stay pending and are claimed by the next one, so none is dropped; a
request a killed worker had claimed is claimed again by the standby that takes over.
"""
from __future__ import annotations

import asyncio
import logging
from contextlib import suppress
from functools import partial
from collections.abc import Awaitable
from pathlib import Path

from rag import Embedder, WriteRefused, make_embedder
from state.db import StateDB, StateUnavailable
from state.sync_requests import SOURCE_REQUEST, SyncRequests
from sync.config import SyncConfig
from sync.errors import SyncError
from sync.lease import WriterLease
from sync.report import SyncReport
from sync.scheduler import start_scheduler
from sync.service import run_sync
from sync.watcher import watch_folder

log = logging.getLogger("docsbot.sync")

# The longest the worker sleeps between looks at the request table, even with LISTEN/NOTIFY
# (a notification lost with a dropped connection is then picked up by this poll).
MAX_WAIT_S = 30.0


class SyncWorker:
    def __init__(
        self, config: SyncConfig, db: StateDB, embedder: Embedder | None = None,
        watch: Path | None = None, holder: str | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.watch = watch
        self.lease = WriterLease(db, config.lease, holder)
        self.requests = SyncRequests(db, config.request_poll_s)
        self.last: SyncReport | None = None
        self.runs = 0  # syncs started by this worker

    async def run(self, stop: asyncio.Event) -> None:
        """Until `stop` is set: stand by for the lease, then sync while holding it."""
        try:
            while not stop.is_set():
                if not await _until(self.lease.wait_acquire(), stop):
                    return
                log.info("%s holds the index-writer lease: syncing", self.lease.holder)
                await self._work(stop)
        finally:
            await self.lease.release()
            await self.requests.close()

    async def _work(self, stop: asyncio.Event) -> None:
        if self.embedder is None:
            self.embedder = await asyncio.to_thread(make_embedder, self.config.rag)
        if self.config.sources is None:
            schedulers = [start_scheduler(self.config, partial(self._request, "schedule"))]
        else:  # each source on its own schedule (read when the lease is taken)
            schedulers = [start_scheduler(source.sync, partial(self._request, f"{SOURCE_REQUEST}{source.name}"))
                          for source in self.config.sources()]
        stop_watching = asyncio.Event()
        watcher = None
        if self.watch is not None:
            log.info("watching %s", self.watch)
            watcher = asyncio.create_task(watch_folder(
                self.watch, partial(self._request, "watch"), self.config.watch_debounce_ms, stop_watching))
        try:
            while self.lease.held and not stop.is_set():
                try:
                    ids = await self.requests.claim_pending()
                except StateUnavailable as exc:
                    log.warning("cannot read sync requests: %s", exc)
                    await _until(asyncio.sleep(self.config.request_poll_s), stop)
                    continue
                if ids:
                    await self._sync(ids)
                else:
                    await _until(self.requests.wait(min(MAX_WAIT_S, self.lease.renew_s)), stop)
        finally:
            for scheduler in schedulers:
                scheduler.shutdown(wait=False)
            stop_watching.set()
            if watcher is not None:
                await asyncio.wait_for(watcher, 10)

    async def _request(self, source: str) -> None:
        try:
            await self.requests.request(source)
        except StateUnavailable as exc:
            log.warning("could not record a %s sync request: %s", source, exc)

    async def _sync(self, ids: list[int]) -> None:
        self.runs += 1
        try:
            only = await self.requests.sources_named(ids) if self.config.sources is not None else None
            self.last = await asyncio.to_thread(run_sync, self.config, self.embedder, self.lease, only)
            ok, summary = True, self.last.render()
        except (SyncError, WriteRefused) as exc:  # misconfigured, or the lease was lost: recorded, retried next time
            log.warning("sync not run: %s", exc)
            ok, summary = False, str(exc)
        except Exception:  # recorded in the sync status by run_sync; the worker keeps going
            log.exception("sync failed; the index keeps its last good state")
            ok, summary = False, "failed (details in the worker's log)"
        try:
            await self.requests.finish(ids, ok, summary)
        except StateUnavailable as exc:  # they stay pending: the next sync covers them again
            log.warning("could not mark sync requests done: %s", exc)


async def _until(work: Awaitable[object], stop: asyncio.Event) -> bool:
    """Await `work` unless `stop` is set first (then cancel it); True when `work` finished."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.create_task(stop.wait())
    done, _ = await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if task in done:
        task.result()  # its exception, if any
        return True
    task.cancel()
    with suppress(asyncio.CancelledError):
        await task
    return False
