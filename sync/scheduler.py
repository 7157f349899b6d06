"""Sync triggers inside one process: a coalescing runner, and the APScheduler job that drives it.

The scheduler fires every DOCSBOT_SYNC_INTERVAL_MINUTES (or on DOCSBOT_SYNC_CRON), with jitter so
many bots do not hit the git server at once; max_instances=1 and coalesce=True keep a slow sync
from piling up runs. Webhook pushes and folder changes call the same `SyncRunner.trigger`, which
runs at most one sync at a time and queues at most one more, so a push during a sync is never lost.
"""
from __future__ import annotations

import asyncio
import logging
from datetime import datetime, timezone

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from docsbot.settings import Settings
from rag.embeddings import Embedder
from sync.errors import SyncError
from sync.report import SyncReport
from sync.service import run_sync

log = logging.getLogger("docsbot.sync")


class SyncRunner:
    """Runs `run_sync` in a worker thread; triggers during a run are folded into one more run."""

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.embedder = embedder
        self.last: SyncReport | None = None
        self.runs = 0  # syncs started by this runner
        self._running = False
        self._pending = False

    async def trigger(self) -> None:
        if self._running:
            self._pending = True
            return
        self._running = True
        try:
            while True:
                self._pending = False
                await asyncio.to_thread(self._run_once)
                if not self._pending:
                    return
        finally:
            self._running = False

    def _run_once(self) -> None:
        self.runs += 1
        try:
            self.last = run_sync(self.settings, self.embedder)
        except SyncError as exc:  # busy (another process syncs) or misconfigured: logged, retried next time
            log.warning("sync not run: %s", exc)
        except Exception:  # recorded in the index's status by run_sync; the scheduler keeps going
            log.exception("sync failed; the index keeps its last good state")


def schedule_trigger(settings: Settings) -> BaseTrigger:
    jitter = settings.sync_jitter_s or None
    if settings.sync_cron.strip():
        fields = settings.sync_cron.split()
        if len(fields) != 5:
            raise ValueError(f"DOCSBOT_SYNC_CRON needs 5 fields (minute hour day month weekday), got {len(fields)}")
        minute, hour, day, month, weekday = fields
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=weekday, jitter=jitter)
    if settings.sync_interval_minutes <= 0:
        raise ValueError("DOCSBOT_SYNC_INTERVAL_MINUTES must be positive")
    return IntervalTrigger(minutes=settings.sync_interval_minutes, jitter=jitter)


def start_scheduler(settings: Settings, runner: SyncRunner) -> AsyncIOScheduler:
    """Start the periodic sync job on the running event loop; the first sync runs at once."""
    scheduler = AsyncIOScheduler(timezone=timezone.utc)
    scheduler.add_job(
        runner.trigger, schedule_trigger(settings), id="docs-sync", max_instances=1, coalesce=True,
        next_run_time=datetime.now(timezone.utc), misfire_grace_time=None,
    )
    scheduler.start()
    return scheduler
