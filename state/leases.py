"""Named leases with an expiry: the index-writer lease that keeps one sync worker writing.

A lease row names its holder and when it expires; the holder renews it well before then. Taking
a lease is one conditional UPDATE (free, expired, or already ours) or, for a lease never taken,
one INSERT on the primary key: of two processes racing, exactly one succeeds on SQLite and
Postgres alike. Times are epoch seconds of the callers' clocks, so hosts need NTP (a skew of a
second or two against a 15 s lease does not matter)."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, Float, String, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB
from state.schema import Base
from state.status_rows import live


class LeaseRow(Base):
    __tablename__ = "leases"

    name: Mapped[str] = mapped_column(String, primary_key=True)
    holder: Mapped[str] = mapped_column(String)
    acquired_at: Mapped[float] = mapped_column(Float)  # epoch seconds, when this holder took it
    expires_at: Mapped[float] = mapped_column(Float)


@dataclass(frozen=True)
class Lease:
    name: str
    holder: str
    acquired_at: float
    expires_at: float


class Leases:
    def __init__(self, db: StateDB, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock

    async def acquire(self, name: str, holder: str, ttl_s: float) -> bool:
        """Take `name` when it is free or expired, or renew it when `holder` has it; False when
        someone else holds it. Raises StateUnavailable when the database cannot be reached."""
        now = self._clock()
        async with self.db.begin() as session:
            renewed = cast(CursorResult[Any], await session.execute(
                update(LeaseRow).where(LeaseRow.name == name, LeaseRow.holder == holder)
                .values(expires_at=now + ttl_s)
            ))
            if renewed.rowcount == 1:
                return True
            taken = cast(CursorResult[Any], await session.execute(
                update(LeaseRow).where(LeaseRow.name == name, LeaseRow.expires_at <= now)
                .values(holder=holder, acquired_at=now, expires_at=now + ttl_s)
            ))
            if taken.rowcount == 1:
                return True
        try:
            async with self.db.begin() as session:
                await session.execute(
                    insert(LeaseRow).values(name=name, holder=holder, acquired_at=now, expires_at=now + ttl_s)
                )
            return True
        except IntegrityError:  # held by someone else (or just taken by a racing process)
            return False

    async def release(self, name: str, holder: str) -> None:
        """Give the lease up at once (a standby need not wait for it to expire)."""
        async with self.db.begin() as session:
            await session.execute(delete(LeaseRow).where(LeaseRow.name == name, LeaseRow.holder == holder))

    async def current(self, name: str) -> Lease | None:
        """The live holder of `name`, or None when it is free or expired."""
        async with self.db.begin() as session:
            row = (await session.execute(select(LeaseRow).where(LeaseRow.name == name))).scalar_one_or_none()
        if row is None or not live(row.expires_at, self._clock()):
            return None
        return Lease(row.name, row.holder, row.acquired_at, row.expires_at)
