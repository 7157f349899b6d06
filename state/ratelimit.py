"""Per-user sliding-window rate limits shared by every replica (6/min means 6/min in total).

One row per user holds the times of their recent questions. A take locks that row (`SELECT … FOR
UPDATE`; on SQLite the transaction holds the write lock from BEGIN), so two replicas taking at
the same moment are serialized and cannot both pass the limit."""
from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB, retry_insert_race
from state.schema import Base


class RateWindow(Base):
    __tablename__ = "rate_windows"

    user_id: Mapped[str] = mapped_column(String, primary_key=True)
    stamps: Mapped[list[float]] = mapped_column(JSON)  # epoch seconds of takes inside the window


class RateLimit:
    """At most `per_minute` questions per user in any sliding `window_s`, across all replicas."""

    def __init__(self, db: StateDB, per_minute: int, window_s: float = 60.0,
                 clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.per_minute = per_minute
        self.window_s = window_s
        self._clock = clock

    async def take(self, user: str) -> float:
        """0 when `user` may ask now (and counts it), else seconds until they may."""

        @retry_insert_race  # another replica created this user's row at the same moment: the retry locks it
        async def attempt() -> float:
            async with self.db.begin(durable=False) as session:  # lost in a crash: a few free questions
                row = await session.get(RateWindow, user, with_for_update=True)
                now = self._clock()
                if row is None:
                    session.add(RateWindow(user_id=user, stamps=[now]))
                    return 0.0
                recent = [t for t in row.stamps if t > now - self.window_s]
                if len(recent) >= self.per_minute:
                    return recent[0] + self.window_s - now
                row.stamps = [*recent, now]
                return 0.0

        return await attempt()
