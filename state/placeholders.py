"""Placeholders ("Looking through the docs…") that were posted and not yet ended, shared by every
replica, so that one left behind by a process that died (`kill -9`, out of memory, a lost host)
is ended by another replica, or by the same one once restarted, and never twice.

Each row names the replica that owns it and when its lease expires; the owner renews the leases
of its rows well before then. A row whose lease expired is an orphan: whoever takes it first (one
conditional UPDATE, the same on SQLite and Postgres) ends its placeholder with a note and a
button to ask again, and keeps the question until the button is pressed (`take`) or the row is
pruned. The question is stored as the answer log stores it, and never logged."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import CursorResult, Float, String, Text, delete, insert, select, update
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB
from state.schema import Base

OPEN, ENDING, ENDED = "open", "ending", "ended"  # ended: the note with its button is shown


class OpenPlaceholderRow(Base):
    __tablename__ = "open_placeholders"

    answer_id: Mapped[str] = mapped_column(String, primary_key=True)
    channel: Mapped[str] = mapped_column(String)
    ts: Mapped[str] = mapped_column(String)
    thread_ts: Mapped[str | None] = mapped_column(String, nullable=True)
    asker: Mapped[str] = mapped_column(String)
    question: Mapped[str] = mapped_column(Text)
    surface: Mapped[str] = mapped_column(String)
    owner: Mapped[str] = mapped_column(String, index=True)
    state: Mapped[str] = mapped_column(String)
    expires_at: Mapped[float] = mapped_column(Float, index=True)  # epoch seconds


@dataclass(frozen=True)
class Orphan:
    answer_id: str
    channel: str
    ts: str
    thread_ts: str | None
    asker: str
    question: str
    surface: str


class PlaceholderJournal:
    """The shared record of open placeholders; every method raises StateUnavailable when the
    database cannot be reached (callers log it and go on: the answer itself never waits on it)."""

    def __init__(self, db: StateDB, owner: str, lease_s: float, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.owner = owner  # this process: a restarted one is a new owner
        self.lease_s = lease_s
        self._clock = clock

    async def record(self, opened: list[Orphan], closed: list[str]) -> None:
        """In one transaction: placeholders posted (`opened`) and ended (`closed`, answer ids: by
        an answer, a note, or the restart note of a drain). One opened and closed meanwhile is
        neither."""
        both = {o.answer_id for o in opened} & set(closed)
        opened, closed = [o for o in opened if o.answer_id not in both], [a for a in closed if a not in both]
        if not opened and not closed:
            return
        async with self.db.begin() as session:
            if opened:
                expires_at = self._clock() + self.lease_s
                await session.execute(insert(OpenPlaceholderRow), [
                    {**vars(o), "owner": self.owner, "state": OPEN, "expires_at": expires_at} for o in opened])
            if closed:
                await session.execute(delete(OpenPlaceholderRow).where(OpenPlaceholderRow.answer_id.in_(closed),
                                                                       OpenPlaceholderRow.owner == self.owner))

    async def opened(self, orphan: Orphan) -> None:
        await self.record([orphan], [])

    async def closed(self, answer_id: str) -> None:
        await self.record([], [answer_id])

    async def renew(self) -> int:
        """Push back the expiry of every placeholder this process still has open."""
        async with self.db.begin(durable=False) as session:
            renewed = cast(CursorResult[Any], await session.execute(
                update(OpenPlaceholderRow)
                .where(OpenPlaceholderRow.owner == self.owner, OpenPlaceholderRow.state != ENDED)
                .values(expires_at=self._clock() + self.lease_s)))
        return renewed.rowcount

    async def orphans(self, limit: int = 50) -> list[Orphan]:
        """Placeholders whose owner stopped renewing them (or died while ending them)."""
        async with self.db.begin() as session:
            rows = (await session.execute(
                select(OpenPlaceholderRow)
                .where(OpenPlaceholderRow.state != ENDED, OpenPlaceholderRow.expires_at <= self._clock())
                .order_by(OpenPlaceholderRow.expires_at).limit(limit))).scalars().all()
        return [_orphan(row) for row in rows]

    async def claim(self, answer_id: str) -> bool:
        """Take an orphan to end it: True for exactly one of any number of racing replicas."""
        now = self._clock()
        async with self.db.begin() as session:
            taken = cast(CursorResult[Any], await session.execute(
                update(OpenPlaceholderRow)
                .where(OpenPlaceholderRow.answer_id == answer_id, OpenPlaceholderRow.state != ENDED,
                       OpenPlaceholderRow.expires_at <= now)
                .values(owner=self.owner, state=ENDING, expires_at=now + self.lease_s)))
        return taken.rowcount == 1

    async def ended(self, answer_id: str, keep_s: float) -> None:
        """The orphan's note is shown; its question is kept `keep_s` for the button."""
        async with self.db.begin() as session:
            await session.execute(
                update(OpenPlaceholderRow)
                .where(OpenPlaceholderRow.answer_id == answer_id, OpenPlaceholderRow.owner == self.owner)
                .values(state=ENDED, expires_at=self._clock() + keep_s))

    async def take(self, answer_id: str, asker: str) -> Orphan | None:
        """The question of an ended orphan, for its asker, once (a second press finds nothing)."""
        async with self.db.begin() as session:
            row = (await session.execute(select(OpenPlaceholderRow).where(
                OpenPlaceholderRow.answer_id == answer_id, OpenPlaceholderRow.state == ENDED,
                OpenPlaceholderRow.asker == asker))).scalar_one_or_none()
            if row is None:
                return None
            gone = cast(CursorResult[Any], await session.execute(delete(OpenPlaceholderRow).where(
                OpenPlaceholderRow.answer_id == answer_id, OpenPlaceholderRow.state == ENDED)))
        return _orphan(row) if gone.rowcount == 1 else None

    async def prune(self) -> int:
        """Forget ended orphans whose button is past its time."""
        async with self.db.begin() as session:
            gone = cast(CursorResult[Any], await session.execute(delete(OpenPlaceholderRow).where(
                OpenPlaceholderRow.state == ENDED, OpenPlaceholderRow.expires_at <= self._clock())))
        return gone.rowcount


def _orphan(row: OpenPlaceholderRow) -> Orphan:
    return Orphan(row.answer_id, row.channel, row.ts, row.thread_ts, row.asker, row.question, row.surface)
