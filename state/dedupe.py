"""Event dedupe shared by every replica: the first process to claim a key wins it until it expires.

Slack delivers an event again when the first delivery was not acknowledged in time (to any
replica), and a DM mention arrives both as `app_mention` and as `message.im`; a claim is one
INSERT on a primary key, so whichever replica gets there first answers and the others drop it."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, cast

from sqlalchemy import CursorResult, Float, String, delete, insert, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB
from state.schema import Base


class DedupeKey(Base):
    __tablename__ = "dedupe_keys"

    key: Mapped[str] = mapped_column(String, primary_key=True)
    expires_at: Mapped[float] = mapped_column(Float, index=True)  # epoch seconds


class Dedupe:
    def __init__(self, db: StateDB, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock

    async def claim(self, key: str, ttl_s: float) -> bool:
        """True when this call is the first to claim `key` (or the previous claim expired).
        Raises StateUnavailable when the database cannot be reached: the caller decides."""
        now = self._clock()
        try:
            async with self.db.begin(durable=False) as session:  # lost in a crash: a rare double answer
                await session.execute(insert(DedupeKey).values(key=key, expires_at=now + ttl_s))
            return True
        except IntegrityError:
            pass
        # Held: take it over only if it has expired (one of several racing callers wins the UPDATE).
        async with self.db.begin(durable=False) as session:
            taken = cast(CursorResult[Any], await session.execute(
                update(DedupeKey)
                .where(DedupeKey.key == key, DedupeKey.expires_at <= now)
                .values(expires_at=now + ttl_s)
            ))
        return taken.rowcount == 1

    async def prune(self) -> int:
        """Delete expired keys (run periodically; an expired key is also reclaimable in place)."""
        async with self.db.begin() as session:
            result = cast(CursorResult[Any],
                          await session.execute(delete(DedupeKey).where(DedupeKey.expires_at <= self._clock())))
        return result.rowcount
