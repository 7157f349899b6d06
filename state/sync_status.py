"""The outcome of the last sync (and when one last succeeded), for `docsbot status` and
`/docs status` on any process. The index itself records only what it holds (the indexed commit,
in its metadata, written after the chunks)."""
from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import JSON, Boolean, Float, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB
from state.schema import Base

INDEX = "index"  # one row per index; there is one today


class SyncStatusRow(Base):
    __tablename__ = "sync_status"

    name: Mapped[str] = mapped_column(String, primary_key=True)
    ok: Mapped[bool] = mapped_column(Boolean)
    at: Mapped[float] = mapped_column(Float)  # epoch seconds the sync ended
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    report: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    last_success_at: Mapped[float | None] = mapped_column(Float, nullable=True)


def iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


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
            return {"last_sync": None, "last_success_at": None}
        return {
            "last_sync": {"ok": row.ok, "at": iso(row.at), "error": row.error, "report": row.report},
            "last_success_at": iso(row.last_success_at),
        }
