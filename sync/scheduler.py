"""The sync schedule: an APScheduler job on the worker's event loop that requests a sync.

It fires every DOCSBOT_SYNC_INTERVAL_MINUTES (or on DOCSBOT_SYNC_CRON), with jitter so many bots
do not hit the git server at once, and once at start. Firing only records a sync request (see
`sync.worker`), so a slow sync never piles up runs: pending requests are folded into the next one.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime, timezone

from apscheduler.schedulers.asyncio import AsyncIOScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.cron import CronTrigger
from apscheduler.triggers.interval import IntervalTrigger

from sync.config import SyncConfig


def schedule_trigger(config: SyncConfig) -> BaseTrigger:
    jitter = config.jitter_s or None
    if config.cron.strip():
        fields = config.cron.split()
        if len(fields) != 5:
            raise ValueError(f"DOCSBOT_SYNC_CRON needs 5 fields (minute hour day month weekday), got {len(fields)}")
        minute, hour, day, month, weekday = fields
        return CronTrigger(minute=minute, hour=hour, day=day, month=month, day_of_week=weekday, jitter=jitter)
    if config.interval_minutes <= 0:
        raise ValueError("DOCSBOT_SYNC_INTERVAL_MINUTES must be positive")
    return IntervalTrigger(minutes=config.interval_minutes, jitter=jitter)


def start_scheduler(config: SyncConfig, fire: Callable[[], Awaitable[None]]) -> AsyncIOScheduler:
    """Start the periodic job on the running event loop; it fires at once, then on schedule."""
    scheduler = AsyncIOScheduler(timezone=timezone.utc)
    scheduler.add_job(
        fire, schedule_trigger(config), id="docs-sync", max_instances=1, coalesce=True,
        next_run_time=datetime.now(timezone.utc), misfire_grace_time=None,
    )
    scheduler.start()
    return scheduler
