"""Threads the bot answered in: whether a reply there comes from someone it answered, recently
(bot/followups.py). Read from the answer log, which every replica writes: nothing is stored for
a message that is not a follow-up."""
from __future__ import annotations

from sqlalchemy import exists, select

from state.answers import AnswerRow
from state.db import StateDB


async def answered_in_thread(db: StateDB, channel: str, thread_ts: str, asker: str, since_ms: int) -> bool:
    """Whether an answer to `asker` was posted in the thread `thread_ts` of `channel` at or after
    `since_ms` (epoch milliseconds). Raises StateUnavailable: the caller decides."""
    async with db.begin() as session:
        return bool(await session.scalar(select(exists().where(
            AnswerRow.channel == channel, AnswerRow.thread_ts == thread_ts, AnswerRow.asker == asker,
            AnswerRow.created_ms >= since_ms, AnswerRow.message_ts != ""))))
