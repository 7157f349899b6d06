"""The docs changes proposed from Slack or `docsbot propose` (proposals/): one row per branch,
with where it was asked (its thread, to tell when the request merges) and its page's level (a
list shows a proposal only to readers at that level or above). Shared by every replica."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import BigInteger, Integer, String, select
from sqlalchemy.orm import Mapped, mapped_column

from rag import Level
from state.db import StateDB
from state.schema import Base


class ProposalRow(Base):
    __tablename__ = "proposals"

    branch: Mapped[str] = mapped_column(String, primary_key=True)
    page: Mapped[str] = mapped_column(String)  # as cited (`handbook:ops/deploy.md`)
    section: Mapped[str] = mapped_column(String)
    level: Mapped[str] = mapped_column(String)  # the page's level when it was proposed
    url: Mapped[str] = mapped_column(String)  # the pull or merge request; "" for a branch or patch alone
    number: Mapped[int] = mapped_column(Integer)
    proposer: Mapped[str] = mapped_column(String)  # a Slack user id, or the name `docsbot propose` was given
    channel: Mapped[str] = mapped_column(String)  # "" from the command line
    thread_ts: Mapped[str] = mapped_column(String)
    answer_id: Mapped[str] = mapped_column(String)  # the thread's answer, "" when none
    state: Mapped[str] = mapped_column(String, index=True)  # open, merged, closed
    created_ms: Mapped[int] = mapped_column(BigInteger)


@dataclass(frozen=True)
class Proposed:
    branch: str
    page: str
    section: str
    level: Level
    url: str = ""
    number: int = 0
    proposer: str = ""
    channel: str = ""
    thread_ts: str = ""
    answer_id: str = ""
    state: str = "open"
    created_ms: int = 0


class Proposals:
    def __init__(self, db: StateDB, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self._clock = clock

    async def add(self, proposed: Proposed) -> None:
        """Raises StateUnavailable: the caller says the request is open but unrecorded."""
        async with self.db.begin() as session:
            session.add(ProposalRow(
                branch=proposed.branch, page=proposed.page, section=proposed.section, level=proposed.level.name,
                url=proposed.url, number=proposed.number, proposer=proposed.proposer, channel=proposed.channel,
                thread_ts=proposed.thread_ts, answer_id=proposed.answer_id, state=proposed.state,
                created_ms=int(self._clock() * 1000)))

    async def open(self, max_level: Level) -> list[Proposed]:
        """The open proposals on pages a reader at `max_level` may read, oldest first."""
        async with self.db.begin() as session:
            rows = (await session.scalars(select(ProposalRow).where(ProposalRow.state == "open")
                                          .order_by(ProposalRow.created_ms))).all()
        return [_proposed(row) for row in rows if _level(row.level) <= max_level]


def _proposed(row: ProposalRow) -> Proposed:
    return Proposed(row.branch, row.page, row.section, _level(row.level), row.url, row.number, row.proposer,
                    row.channel, row.thread_ts, row.answer_id, row.state, row.created_ms)


def _level(name: str) -> Level:
    """A stored level; one this version does not know is `restricted` (fail closed)."""
    try:
        return Level.parse(name)
    except ValueError:
        return Level.restricted
