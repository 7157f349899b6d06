"""Sync requests in the state store (SQLite and Postgres): nothing recorded during a sync is
dropped, a dead worker's claims are claimed again, and `wait()` wakes the worker (at once by
NOTIFY on Postgres, by polling elsewhere)."""
from __future__ import annotations

import asyncio
import time

from state.opening import open_state
from state.sync_requests import SyncRequests


async def test_a_request_during_a_sync_is_left_for_the_next_one(state_url: str) -> None:
    db = await open_state(state_url)
    requests = SyncRequests(db, poll_s=0.1)
    try:
        first = [await requests.request("schedule"), await requests.request("webhook")]
        assert await requests.claim_pending() == first
        during = await requests.request("webhook")  # a push while that sync runs
        await requests.finish(first, True, "ok")
        assert await requests.claim_pending() == [during]
        # The worker dies before finishing: its successor claims the same request again.
        assert await requests.claim_pending() == [during]
        await requests.finish([during], False, "fetch failed")
        assert await requests.claim_pending() == [] and await requests.pending() == 0
    finally:
        await requests.close()
        await db.close()


async def test_wait_returns_soon_after_a_request_from_another_process(state_url: str) -> None:
    worker_db, replica_db = await open_state(state_url), await open_state(state_url)
    notifies = worker_db.engine.dialect.name == "postgresql"
    # With NOTIFY the poll interval is irrelevant: make it long so only a notification is fast.
    worker = SyncRequests(worker_db, poll_s=30.0 if notifies else 0.2)
    replica = SyncRequests(replica_db)
    try:
        started = time.monotonic()
        await worker.wait(0.5)  # nothing pending: the full timeout
        assert time.monotonic() - started >= 0.45
        waiting = asyncio.create_task(worker.wait(20))
        await asyncio.sleep(0.5)
        sent = time.monotonic()
        await replica.request("command")
        await asyncio.wait_for(waiting, 20)
        assert time.monotonic() - sent < 1.0
        started = time.monotonic()
        await worker.wait(20)  # still pending (not claimed): returns at once
        assert time.monotonic() - started < 1.0
    finally:
        await worker.close()
        await worker_db.close()
        await replica_db.close()
