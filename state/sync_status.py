"""The outcome of the last sync (and when one last succeeded), and how far a running one got, for
`docsbot status` and `/docs status` on any process. The index itself records only what it holds
(the indexed commit, in its metadata, written after the chunks)."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import JSON, Boolean, Float, Integer, String, Text, delete
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB
from state.schema import Base
from state.status_rows import INDEX, NEVER_SYNCED, last_sync, progress


class SyncStatusRow(Base):
    __tablename__ = "sync_status"

    name: Mapped[str] = mapped_column(String, primary_key=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    at: Mapped[float] = mapped_column(Float)  # epoch seconds the sync ended
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    last_success_at: Mapped[float | None] = mapped_column(Float, nullable=True)


class SyncProgressRow(Base):
    """Chunks embedded so far by the running sync or index (0 of 0 until embedding begins),
    written by the writer holding the index-writer lease from the start of its run and deleted
    at its end; a row whose `holder` no longer holds that lease is a run that never ended (it died)."""

    __tablename__ = "sync_progress"

    name: Mapped[str] = mapped_column(String, primary_key=True)
    holder: Mapped[str] = mapped_column(String)
    done: Mapped[int] = mapped_column(Integer)
    total: Mapped[int] = mapped_column(Integer)


class SyncStatus:
    def __init__(self, db: StateDB, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock

    async def record(self, ok: bool, report: dict[str, Any] | None = None, error: str | None = None) -> None:
        """Record a finished sync: its report when it succeeded, its (redacted) error when not."""
        now = self._clock()
        async with self.db.begin() as session:
            row = await session.get(SyncStatusRow, INDEX, with_for_update=True)
            if row is None:
                row = SyncStatusRow(name=INDEX, last_success_at=None)
                session.add(row)
            row.ok, row.at, row.error, row.report = ok, now, error, report
            if ok:
                row.last_success_at = now

    async def read(self) -> dict[str, Any]:
        """`{"last_sync": {"ok", "at", "error", "report"} | None, "last_success_at": str | None}`."""
        async with self.db.begin() as session:
            row = await session.get(SyncStatusRow, INDEX)
        if row is None:
            return dict(NEVER_SYNCED)
        return last_sync(row.ok, row.at, row.error, row.report, row.last_success_at)


class SyncProgress:
    def __init__(self, db: StateDB) -> None:
        self.db = db

    async def report(self, holder: str, done: int, total: int) -> None:
        # Losing the last report in a database crash is harmless: the next one replaces it.
        async with self.db.begin(durable=False) as session:
            row = await session.get(SyncProgressRow, INDEX, with_for_update=True)
            if row is None:
                session.add(SyncProgressRow(name=INDEX, holder=holder, done=done, total=total))
            else:
                row.holder, row.done, row.total = holder, done, total

    async def clear(self, holder: str) -> None:
        async with self.db.begin() as session:
            await session.execute(delete(SyncProgressRow).where(SyncProgressRow.name == INDEX,
                                                                SyncProgressRow.holder == holder))

    async def read(self, live_holder: str | None) -> tuple[dict[str, int] | None, str | None]:
        """What the row says given `live_holder` (state.status_rows.progress)."""
        async with self.db.begin() as session:
            row = await session.get(SyncProgressRow, INDEX)
        return (None, None) if row is None else progress(row.holder, row.done, row.total, live_holder)
