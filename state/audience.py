"""Audience changes every replica hears of: a log of the channels and people whose audience changed.

Slack delivers `member_joined_channel`, `user_change` and the like to one replica; that replica
records the change here and every replica reads what is new before each answer (one query on
the primary key, nothing returned when nothing changed), forgetting what it had cached.

Writers take turns (a transaction-scoped advisory lock on Postgres, the write lock SQLite takes
at BEGIN) and number their entry max+1, so entries commit in the order of their numbers and a
reader that has seen up to N can never later find an entry below N it missed (a serial column
gives no such promise on Postgres: numbers are handed out at insert, and may commit out of
order). The newest entry is never pruned, so numbers never start again."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Float, Integer, String, delete, func, insert, select, text
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB
from state.schema import Base

KEEP_S = 86_400.0  # a day: far longer than any lookup cache an entry could make stale
_WRITERS_LOCK = 0x617564  # pg_advisory_xact_lock key of the log's writers ("aud")


class AudienceChange(Base):
    __tablename__ = "audience_changes"

    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    channel_id: Mapped[str] = mapped_column(String, default="")  # whose members, sharing or privacy changed
    user_id: Mapped[str] = mapped_column(String, default="")  # or whose account changed
    at: Mapped[float] = mapped_column(Float)  # epoch seconds, for pruning


@dataclass(frozen=True)
class Changed:
    """One entry: a channel (`channel_id`) or a person (`user_id`)."""

    seq: int
    channel_id: str
    user_id: str


class AudienceChanges:
    def __init__(self, db: StateDB, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock

    async def record(self, channel_id: str = "", user_id: str = "") -> int:
        """Log a change (a channel's or a person's); returns its number. Raises StateUnavailable."""
        now = self._clock()
        async with self.db.begin() as session:
            if self.db.engine.dialect.name == "postgresql":  # SQLite: BEGIN IMMEDIATE took the write lock
                await session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _WRITERS_LOCK})
            newest = await session.scalar(select(func.max(AudienceChange.seq))) or 0
            await session.execute(insert(AudienceChange).values(seq=newest + 1, channel_id=channel_id,
                                                                user_id=user_id, at=now))
            await session.execute(delete(AudienceChange).where(AudienceChange.at < now - KEEP_S,
                                                               AudienceChange.seq < newest))
        return newest + 1

    async def newest(self) -> int:
        """The number of the newest entry (0 when there is none)."""
        async with self.db.begin(durable=False) as session:
            return await session.scalar(select(func.max(AudienceChange.seq))) or 0

    async def since(self, seq: int) -> list[Changed]:
        """Entries numbered above `seq`, oldest first (none, usually). Raises StateUnavailable."""
        async with self.db.begin(durable=False) as session:
            rows = await session.execute(
                select(AudienceChange.seq, AudienceChange.channel_id, AudienceChange.user_id)
                .where(AudienceChange.seq > seq).order_by(AudienceChange.seq))
            return [Changed(*row) for row in rows]
