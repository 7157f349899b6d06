"""docsbot's own record of the threads it takes part in, so that a follow-up, a mention in a
thread or a message in the assistant panel reads its context here rather than from Slack's
`conversations.replies` (a round trip per answer; 1 call a minute for an app distributed outside
the Marketplace).

Tables:
* `threads`, one row per thread whose record is kept (channel, thread ts): a thread docsbot was
  asked a question in, from that question on (a question at the top level starts its own), or
  since Slack was read once for it (its earlier messages then copied in).
* `thread_messages`, one row per message in those threads (channel, ts): its author (`user`, and
  `bot_id` for an app's) and, for a person's or docsbot's own, its text as Slack gave it. Another
  app's message keeps no text: it is never a turn of the conversation (bot/conversation.py).
  `question` marks a message docsbot took as a question to it (from the moment it starts
  answering, on any replica), so its asker's follow-up written while that answer is still being
  written is one (`asked_or_answered_in_thread`); once set it stays set.

What people wrote here is as private as the docs: it is read only to answer in that same thread,
never logged, and kept as long as the answer log keeps answers (`prune`, DOCSBOT_ANSWER_LOG_DAYS);
a message deleted in Slack is deleted here, an edited one edited. Nothing is stored for a message
in a thread docsbot takes no part in (the statement that would store it matches no thread).

`asked_or_answered_in_thread` reads the answer log and the record: whether a reply there comes
from someone docsbot answered, or is answering, recently (bot/followups.py).
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import BigInteger, Boolean, Index, String, Text, delete, exists, false, or_, select, update
from sqlalchemy.orm import Mapped, mapped_column

from state.answers import AnswerRow
from state.db import StateDB, retry_insert_race
from state.schema import Base

_DAY_MS = 86_400_000


class ThreadRow(Base):
    __tablename__ = "threads"

    channel: Mapped[str] = mapped_column(String, primary_key=True)
    thread_ts: Mapped[str] = mapped_column(String, primary_key=True)
    created_ms: Mapped[int] = mapped_column(BigInteger)
    updated_ms: Mapped[int] = mapped_column(BigInteger, index=True)  # the last message recorded


class ThreadMessageRow(Base):
    __tablename__ = "thread_messages"
    __table_args__ = (Index(None, "channel", "thread_ts"),)

    channel: Mapped[str] = mapped_column(String, primary_key=True)
    ts: Mapped[str] = mapped_column(String, primary_key=True)
    thread_ts: Mapped[str] = mapped_column(String)
    user: Mapped[str] = mapped_column("user_id", String)
    bot_id: Mapped[str] = mapped_column(String)  # another app's message ("" for a person's or docsbot's)
    text: Mapped[str] = mapped_column(Text)
    created_ms: Mapped[int] = mapped_column(BigInteger, index=True)
    question: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())  # docsbot took it


@dataclass(frozen=True)
class Posted:
    """A message as the record keeps it: what Slack's message objects say of it."""

    ts: str
    user: str
    text: str
    bot_id: str = ""
    question: bool = False  # docsbot took it as a question to it

    @classmethod
    def of(cls, message: dict[str, Any], bot_user_id: str | None) -> "Posted":
        """From a Slack message (an event's, or conversations.replies'); an app's text is not kept."""
        user, bot_id = str(message.get("user") or ""), str(message.get("bot_id") or "")
        by_another_app = (bot_id or message.get("subtype") == "bot_message") and user != (bot_user_id or "")
        text = "" if by_another_app else str(message.get("text") or "")
        return cls(str(message["ts"]), user, text, (bot_id or "app") if by_another_app else "")

    def as_slack(self) -> dict[str, Any]:
        return {"ts": self.ts, "user": self.user, "text": self.text, **({"bot_id": self.bot_id} if self.bot_id else {})}


class ThreadRecord:
    def __init__(self, db: StateDB, retention_days: int = 90, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.retention_days = retention_days
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    async def messages(self, channel: str, thread_ts: str) -> list[dict[str, Any]] | None:
        """The thread's recorded messages in Slack's shape, oldest first; None when docsbot keeps
        no record of it. Raises StateUnavailable: the caller decides."""
        async with self.db.begin() as session:
            if await session.get(ThreadRow, (channel, thread_ts)) is None:
                return None
            rows = await session.scalars(select(ThreadMessageRow).where(
                ThreadMessageRow.channel == channel, ThreadMessageRow.thread_ts == thread_ts))
            found = [Posted(r.ts, r.user, r.text, r.bot_id) for r in rows]
        return [p.as_slack() for p in sorted(found, key=lambda p: float(p.ts))]

    async def start(self, channel: str, thread_ts: str, messages: Sequence[Posted]) -> None:
        """Keep the thread's record from now on, with `messages` (its root, or what Slack gave)."""
        await self._put(channel, thread_ts, messages, start=True)

    async def note(self, channel: str, thread_ts: str, message: Posted) -> bool:
        """Record a message of a thread whose record is kept (else nothing: False); the same
        message again (Slack's retry, or docsbot's answer replacing its placeholder) is rewritten,
        a `question` staying one (each replica records the event it got, in any order)."""
        return await self._put(channel, thread_ts, [message], start=False)

    @retry_insert_race
    async def _put(self, channel: str, thread_ts: str, messages: Sequence[Posted], start: bool) -> bool:
        now = self._now_ms()
        async with self.db.begin() as session:
            thread = await session.get(ThreadRow, (channel, thread_ts), with_for_update=True)
            if thread is None:
                if not start:
                    return False
                thread = ThreadRow(channel=channel, thread_ts=thread_ts, created_ms=now, updated_ms=now)
                session.add(thread)
            thread.updated_ms = now
            for message in messages:
                row = await session.get(ThreadMessageRow, (channel, message.ts))
                if row is None:
                    row = ThreadMessageRow(channel=channel, ts=message.ts, thread_ts=thread_ts, created_ms=now,
                                           question=False)
                    session.add(row)
                row.user, row.bot_id, row.text = message.user, message.bot_id, message.text
                row.question = row.question or message.question
        return True

    async def edited(self, channel: str, ts: str, text: str) -> None:
        """A recorded message was edited in Slack (`message_changed`): its text follows."""
        async with self.db.begin() as session:
            await session.execute(update(ThreadMessageRow).where(
                ThreadMessageRow.channel == channel, ThreadMessageRow.ts == ts, ThreadMessageRow.bot_id == ""
            ).values(text=text))

    async def deleted(self, channel: str, ts: str) -> None:
        """A message was deleted in Slack (`message_deleted`): so it is here."""
        async with self.db.begin() as session:
            await session.execute(delete(ThreadMessageRow).where(
                ThreadMessageRow.channel == channel, ThreadMessageRow.ts == ts))

    async def prune(self) -> int:
        """Delete what was recorded before the retention (threads quiet since then with it).
        Returns the number of messages deleted; a retention of 0 days keeps everything."""
        if self.retention_days <= 0:
            return 0
        cutoff = self._now_ms() - self.retention_days * _DAY_MS
        async with self.db.begin() as session:
            result = await session.execute(delete(ThreadMessageRow).where(ThreadMessageRow.created_ms < cutoff))
            await session.execute(delete(ThreadRow).where(ThreadRow.updated_ms < cutoff))
        return int(getattr(result, "rowcount", 0) or 0)


async def asked_or_answered_in_thread(db: StateDB, channel: str, thread_ts: str, asker: str, since_ms: int) -> bool:
    """Whether, at or after `since_ms` (epoch milliseconds), an answer to `asker` was posted in
    the thread `thread_ts` of `channel` (the answer log), or docsbot took a question of theirs
    there (its record of the thread: that answer may still be being written, on any replica).
    One statement: a thread reply that is no follow-up costs one query. Raises StateUnavailable: the caller decides."""
    answered = exists().where(
        AnswerRow.channel == channel, AnswerRow.thread_ts == thread_ts, AnswerRow.asker == asker,
        AnswerRow.created_ms >= since_ms, AnswerRow.message_ts != "")
    asked = exists().where(
        ThreadMessageRow.channel == channel, ThreadMessageRow.thread_ts == thread_ts,
        ThreadMessageRow.user == asker, ThreadMessageRow.question, ThreadMessageRow.created_ms >= since_ms)
    async with db.begin() as session:
        return bool(await session.scalar(select(or_(answered, asked))))
