"""One writer of the index across every process and host: a lease in the state store.

The holder renews the lease every DOCSBOT_SYNC_LEASE_RENEW_S; when it dies (or loses the
database for longer than DOCSBOT_SYNC_LEASE_TTL_S) the lease expires and a standby takes it
within one renewal period. A writer renews the lease right before each commit to the index
(`checked_writes`), so a holder that lost it, or was cut off from the state store long enough
for a standby to take over, stops before its next commit. What is left: a commit that is still
landing DOCSBOT_SYNC_LEASE_TTL_S after that renewal (or less, by the clock skew between hosts)
may overlap with a standby's first commit.

`WriterLease` is for the long-running worker (held across many syncs, on its event loop);
`writer_lease()` is for one-shot writers (`docsbot sync`, `docsbot index`, `make run`): it takes
the lease, waiting for it as long as a holder that died can keep it (DOCSBOT_SYNC_LEASE_TTL_S),
refuses with SyncBusy when a live holder still renews it after that, and renews it from a
background thread while held.
"""
from __future__ import annotations

import asyncio
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from typing import TYPE_CHECKING, TypeVar

from state.db import StateDB, StateUnavailable
from state.opening import open_state
from state.status_rows import INDEX_WRITER
from state.leases import Leases
from sync.config import LeaseConfig
from sync.errors import SyncBusy, SyncError

if TYPE_CHECKING:  # `docsbot status` imports the lease's name without loading the index
    from rag import Index

log = logging.getLogger("docsbot.sync")

WAIT_POLL_S = 1.0  # a one-shot writer waiting for the lease looks again this often (or each renewal)
T = TypeVar("T")


def holder_id() -> str:
    """Who holds the lease, as shown by `docsbot status`: host, pid and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class WriterLease:
    """The index-writer lease of one process, renewed in the background while held."""

    def __init__(self, db: StateDB, config: LeaseConfig, holder: str | None = None) -> None:
        self.db = db
        self.holder = holder or holder_id()
        self.ttl_s = config.ttl_s
        self.renew_s = config.renew_s
        self._leases = Leases(db)
        self._held = False
        self._valid_until = 0.0  # monotonic time until which the last renewal guarantees it
        self._renewer: asyncio.Task[None] | None = None
        self._released = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def held(self) -> bool:
        """Held, and renewed recently enough that no standby can have taken it."""
        return self._held and time.monotonic() < self._valid_until

    async def _take(self) -> bool:
        asked = time.monotonic()
        self._held = await self._leases.acquire(INDEX_WRITER, self.holder, self.ttl_s)
        if self._held:
            self._valid_until = asked + self.ttl_s
        return self._held

    async def try_acquire(self) -> bool:
        """Take or renew the lease; False when another process holds it (StateUnavailable when
        the state store cannot be reached)."""
        await self._take()
        if self._held and self._renewer is None:
            self._loop = asyncio.get_running_loop()
            self._released.clear()
            self._renewer = asyncio.create_task(self._renew())
        return self._held

    async def wait_acquire(self) -> None:
        """Return once this process holds the lease (a hot standby waits here)."""
        announced = False
        while not await self._try_or_wait():
            if not announced:
                current = await self.current_holder()
                log.info("standing by: %s holds the index-writer lease", current or "another process")
                announced = True
            await asyncio.sleep(self.renew_s)

    async def _try_or_wait(self) -> bool:
        try:
            return await self.try_acquire()
        except StateUnavailable as exc:  # a standby keeps waiting for the store to come back
            log.warning("writer lease: %s", exc)
            return False

    async def current_holder(self) -> str | None:
        try:
            lease = await self._leases.current(INDEX_WRITER)
        except StateUnavailable:
            return None
        return lease.holder if lease else None

    async def _renew(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._released.wait(), self.renew_s)
                return
            except TimeoutError:
                pass
            try:
                await self._take()
            except StateUnavailable as exc:  # keep trying: the lease may still be ours when it is back
                log.warning("could not renew the writer lease: %s", exc)
                continue
            if not self._held:
                log.warning("lost the index-writer lease to another process; no more writes from here")
                self._renewer = None
                return

    async def release(self) -> None:
        """Stop renewing, then give the lease up. A renewal under way is awaited, not cancelled:
        cut off, its database call would finish on the driver's thread after this loop closed
        (an unhandled exception in that thread)."""
        self._released.set()
        if self._renewer is not None:
            await self._renewer
            self._renewer = None
        if self._held:
            self._held = False
            try:
                await self._leases.release(INDEX_WRITER, self.holder)
            except StateUnavailable as exc:  # it expires by itself
                log.warning("could not release the writer lease: %s", exc)

    def confirm(self) -> str | None:
        """Renew the lease now, from a sync thread, so it stays ours for a whole TTL from here:
        None, or why this process may not write. With the state store unreachable, the last
        renewal still counts until it would have expired."""
        try:
            self.call(self._take)
        except StateUnavailable as exc:
            log.warning("could not renew the writer lease before writing: %s", exc)
        if self.held:
            return None
        return "this process no longer holds the index-writer lease (another writer may have taken over)"

    def check(self) -> None:
        """Raise SyncError when this process no longer holds the lease (called before writes)."""
        if not self.held:
            raise SyncError("this process no longer holds the index-writer lease; the sync stopped before writing")

    def call(self, make: Callable[[], Awaitable[T]]) -> T:
        """Run a state-store coroutine on the lease's event loop from a sync thread (the sync
        itself runs in a thread; the database pool belongs to the loop that opened it)."""
        assert self._loop is not None, "call() needs a held lease"
        future: Future[T] = asyncio.run_coroutine_threadsafe(_awaited(make), self._loop)
        return future.result()


@contextmanager
def checked_writes(store: Index, lease: WriterLease) -> Iterator[Index]:
    """Inside the block, each commit to `store` first renews `lease` (one state-store round
    trip) and is refused (WriteRefused) when the lease is no longer this process's."""
    with store.guarded(lease.confirm):
        yield store


async def _awaited(make: Callable[[], Awaitable[T]]) -> T:
    return await make()


async def _take_or_wait(lease: WriterLease, wait_s: float) -> None:
    """Take the lease, waiting up to wait_s for its holder to release it or let it expire."""
    deadline = time.monotonic() + wait_s
    waited_for: str | None = None
    while not await lease.try_acquire():
        holder = await lease.current_holder() or "another process"
        if time.monotonic() >= deadline:
            raise SyncBusy(f"{holder} is writing the index; not starting a second writer")
        if waited_for is None:
            log.warning("waiting up to %.0f s for the index-writer lease held by %s (a holder that was killed "
                        "keeps it until it expires)", max(0.0, deadline - time.monotonic()), holder)
            waited_for = holder
        await asyncio.sleep(min(WAIT_POLL_S, lease.renew_s, max(0.0, deadline - time.monotonic())))


@contextmanager
def writer_lease(config: LeaseConfig, wait_s: float | None = None) -> Iterator[WriterLease]:
    """Hold the index-writer lease for the block. While another process holds it, wait up to
    `wait_s` (default: the lease's TTL and one renewal, by when the lease of a holder that was
    killed has expired), saying once whom for; raise SyncBusy when it is still held then.

    The state store's connection and the renewals live on an event loop in a background thread,
    so this works from plain synchronous code."""
    started: Future[WriterLease] = Future()
    done = threading.Event()
    wait_s = config.ttl_s + config.renew_s if wait_s is None else wait_s

    async def hold() -> None:
        db = await open_state(config.state)
        lease = WriterLease(db, config)
        try:
            await _take_or_wait(lease, wait_s)
            started.set_result(lease)
            while not done.is_set():
                await asyncio.sleep(0.05)
        finally:
            await lease.release()
            await db.close()

    def run() -> None:
        try:
            asyncio.run(hold())
        except BaseException as exc:  # reported to the caller (when it is still waiting)
            if not started.done():
                started.set_exception(exc)

    thread = threading.Thread(target=run, name="writer-lease", daemon=True)
    thread.start()
    try:
        yield started.result()
    finally:
        done.set()
        thread.join()
