"""Sync requests: any process asks for a sync (webhook, `/docs sync`, schedule, file watcher);
the process holding the index-writer lease claims them and records how they ended.

A request stays pending until a sync that started after it finishes: the worker claims what is
pending just before it starts a sync, so a push that arrives during a sync is claimed by the next
one, never dropped, and one that a killed worker had claimed is claimed again by its successor.
The worker sleeps in `wait()`: on Postgres it LISTENs for the NOTIFY each request sends (so a
push starts a sync at once), elsewhere it polls."""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

import psycopg
from sqlalchemy import Boolean, Float, Integer, String, Text, delete, func, select, text, update
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB, own_connection
from state.schema import Base

CHANNEL = "docsbot_sync_requests"
KEEP_FINISHED_S = 7 * 86400  # finished requests are history; a week of it is plenty


class SyncRequest(Base):
    __tablename__ = "sync_requests"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    source: Mapped[str] = mapped_column(String)  # webhook, command, schedule, watch
    requested_at: Mapped[float] = mapped_column(Float)  # epoch seconds
    claimed_at: Mapped[float | None] = mapped_column(Float, nullable=True)
    finished_at: Mapped[float | None] = mapped_column(Float, nullable=True, index=True)
    ok: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)


# A request for one source's sync (several sources, sync/sources.py): `source:<name>`.
SOURCE_REQUEST = "source:"


class SyncRequests:
    def __init__(self, db: StateDB, poll_s: float = 2.0, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.poll_s = poll_s
        self._clock = clock
        self._listener: psycopg.AsyncConnection | None = None

    @property
    def _notifies(self) -> bool:
        return self.db.engine.dialect.name == "postgresql"

    async def request(self, source: str) -> int:
        """Record a request (and wake the worker); returns its id."""
        async with self.db.begin() as session:
            row = SyncRequest(source=source, requested_at=self._clock())
            session.add(row)
            await session.flush()
            if self._notifies:  # delivered when this transaction commits
                await session.execute(text("SELECT pg_notify(:channel, :id)"), {"channel": CHANNEL, "id": str(row.id)})
            return row.id

    async def pending(self) -> int:
        async with self.db.begin() as session:
            return await session.scalar(select(func.count()).where(SyncRequest.finished_at.is_(None))) or 0

    async def claim_pending(self) -> list[int]:
        """Ids of every unfinished request, now claimed by the sync about to start (only the
        lease holder calls this; requests a dead holder claimed are claimed again)."""
        async with self.db.begin() as session:
            ids = list(await session.scalars(select(SyncRequest.id).where(SyncRequest.finished_at.is_(None))))
            if ids:
                await session.execute(
                    update(SyncRequest).where(SyncRequest.id.in_(ids)).values(claimed_at=self._clock()))
        return ids

    async def sources_named(self, ids: list[int]) -> frozenset[str] | None:
        """The sources these requests name (`source:<name>`, a push or a source's schedule), or
        None when one of them is for every source (the command, the shared schedule, a watcher)."""
        async with self.db.begin() as session:
            labels = list(await session.scalars(select(SyncRequest.source).where(SyncRequest.id.in_(ids))))
        if not labels or not all(label.startswith(SOURCE_REQUEST) for label in labels):
            return None
        return frozenset(label.removeprefix(SOURCE_REQUEST) for label in labels)

    async def finish(self, ids: list[int], ok: bool, summary: str) -> None:
        now = self._clock()
        async with self.db.begin() as session:
            if ids:
                await session.execute(
                    update(SyncRequest).where(SyncRequest.id.in_(ids)).values(finished_at=now, ok=ok, summary=summary)
                )
            await session.execute(delete(SyncRequest).where(SyncRequest.finished_at < now - KEEP_FINISHED_S))

    async def wait(self, timeout_s: float) -> None:
        """Return when a request is pending (at once if one already is), or after timeout_s."""
        if self._notifies:
            await self._listen(timeout_s)
            return
        deadline = self._clock() + timeout_s
        while await self.pending() == 0 and self._clock() < deadline:
            await asyncio.sleep(max(0.0, min(self.poll_s, deadline - self._clock())))

    async def _listen(self, timeout_s: float) -> None:
        """Wait for one NOTIFY on a connection kept for it (notifications that came while we were
        busy wait in its socket). A lost connection is reopened on the next call; one the server
        leaves unanswered (LISTEN included) is hung up on within seconds, as the pool's are."""
        try:
            if self._listener is None or self._listener.closed:
                self._listener = await own_connection(self.db)
                await self._listener.execute(f"LISTEN {CHANNEL}")
            if await self.pending():  # recorded before we listened, or not claimed yet
                return
            async for _ in self._listener.notifies(timeout=timeout_s, stop_after=1):
                pass
        except psycopg.Error:
            await self.close()
            await asyncio.sleep(min(timeout_s, self.poll_s))  # the caller polls the table meanwhile

    async def close(self) -> None:
        if self._listener is not None:
            await self._listener.close()
            self._listener = None
