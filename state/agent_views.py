"""What each person is looking at in Slack while docsbot's agent view is open (`app_context_changed`,
bot/agent_view.py): the channel whose scope and readers the next answer in their DM with docsbot
is for. Shared by every replica (the event reaches one, the next message perhaps another). One row
per person, overwritten; a row older than a day is deleted (`prune`)."""
from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import BigInteger, String, delete
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB, retry_insert_race
from state.schema import Base

KEEP_MS = 86_400_000


class AgentViewRow(Base):
    __tablename__ = "agent_views"

    user: Mapped[str] = mapped_column("user_id", String, primary_key=True)
    channel: Mapped[str] = mapped_column(String)  # "" when they look at no conversation
    updated_ms: Mapped[int] = mapped_column(BigInteger, index=True)


class AgentViews:
    def __init__(self, db: StateDB, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    @retry_insert_race
    async def set(self, user: str, channel: str) -> None:
        """`user` now looks at `channel` ("" for none). Raises StateUnavailable: the caller decides."""
        async with self.db.begin(durable=False) as session:  # lost in a crash: the next change says it again
            row = await session.get(AgentViewRow, user, with_for_update=True)
            if row is None:
                row = AgentViewRow(user=user)
                session.add(row)
            row.channel, row.updated_ms = channel, self._now_ms()

    async def get(self, user: str) -> str:
        """The channel `user` last looked at within KEEP_MS, "" for none. Raises StateUnavailable."""
        async with self.db.begin() as session:
            row = await session.get(AgentViewRow, user)
        return row.channel if row is not None and row.updated_ms >= self._now_ms() - KEEP_MS else ""

    async def prune(self) -> None:
        async with self.db.begin() as session:
            await session.execute(delete(AgentViewRow).where(AgentViewRow.updated_ms < self._now_ms() - KEEP_MS))
