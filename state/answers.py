"""Answers the bot posted and the feedback people gave on them, shared by every replica.

Tables:
* `answers`, one row per answer: the question and its thread context, who asked and at which
  levels, where it was posted (conversation id and message ts, plain strings), the chunks
  selected with their versions and commits, the answer, citations, abstention, model, prompt
  version, indexed commit, timings, and the review outcome of a 👎 (`pending` until promoted to
  the golden set or rejected).
* `feedback`, one row per (answer, person), enforced by the primary key: the person's current
  vote. A button click and a reaction are two ways of voting, tracked separately so repeated
  clicks or reactions only rewrite the same row. The effective vote is the most recent one; removing the
  reaction falls back to the button vote, and with no button vote the row is *withdrawn* (vote
  ""), keeping its reason in case the person reacts again. The 👎 form's reason and expected
  answer update the row.

A vote locks its row (`SELECT … FOR UPDATE`; SQLite transactions hold the write lock from BEGIN),
so votes from several replicas at the same moment are all kept. Nothing secret is stored: user
ids, never emails or tokens. `prune()` (run hourly by the bot, never inside a question) deletes
answers older than the retention with their feedback, except a 👎 nobody has reviewed yet.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, fields
from typing import Any, Literal

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, String, Text, and_, delete, exists, false, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from rag import PROMPT_VERSION, Answer, Level
from state.db import StateDB, retry_insert_race
from state.schema import Base

VOTES = ("up", "down")
SOURCES = ("button", "reaction")
REASONS = ("wrong", "outdated", "missing", "not_allowed", "other")
REVIEWS = ("pending", "promoted", "rejected")
_DAY_MS = 86_400_000
_DELETE_BATCH = 500  # ids per DELETE … IN (…)

Vote = Literal["up", "down"]
Source = Literal["button", "reaction"]


class AnswerLogError(ValueError):
    """Bad input to the log (unknown answer, unknown vote or reason); the message says which."""


class AnswerRow(Base):
    __tablename__ = "answers"
    __table_args__ = (Index(None, "channel", "message_ts"), Index(None, "channel", "thread_ts"))

    answer_id: Mapped[str] = mapped_column(String, primary_key=True)
    created_ms: Mapped[int] = mapped_column(BigInteger, index=True)
    question: Mapped[str] = mapped_column(Text)
    history: Mapped[list[dict[str, str]]] = mapped_column(JSON)  # [{"speaker", "text"}]
    asker: Mapped[str] = mapped_column(String)
    asker_level: Mapped[str] = mapped_column(String)
    audience_level: Mapped[str] = mapped_column(String)
    level: Mapped[str] = mapped_column(String)  # answered at min(asker, audience)
    channel: Mapped[str] = mapped_column(String)
    message_ts: Mapped[str] = mapped_column(String)
    thread_ts: Mapped[str] = mapped_column(String)
    # Asked in a public channel of the workspace (not a DM, the panel, a private or shared channel).
    public_channel: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    answer: Mapped[str] = mapped_column(Text)
    answered: Mapped[bool] = mapped_column(Boolean)
    abstain_reason: Mapped[str | None] = mapped_column(String, nullable=True)
    detail: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String)
    prompt_version: Mapped[str] = mapped_column(String)
    index_commit: Mapped[str] = mapped_column(String)
    retrieved: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    citations: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    diagnostics: Mapped[dict[str, Any]] = mapped_column(JSON)
    review: Mapped[str] = mapped_column(String, index=True, default="pending")
    golden_id: Mapped[str] = mapped_column(String, default="")
    reviewed_ms: Mapped[int] = mapped_column(BigInteger, default=0)


class FeedbackRow(Base):
    __tablename__ = "feedback"

    answer_id: Mapped[str] = mapped_column(
        String, ForeignKey("answers.answer_id", ondelete="CASCADE"), primary_key=True
    )
    user: Mapped[str] = mapped_column("user_id", String, primary_key=True)
    vote: Mapped[str] = mapped_column(String, default="")  # effective vote; "" once withdrawn
    button_vote: Mapped[str] = mapped_column(String, default="")
    reaction_vote: Mapped[str] = mapped_column(String, default="")
    reason: Mapped[str | None] = mapped_column(String, nullable=True)
    expected: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_ms: Mapped[int] = mapped_column(BigInteger)
    updated_ms: Mapped[int] = mapped_column(BigInteger)


@dataclass(frozen=True)
class LoggedAnswer:
    answer_id: str
    created_ms: int
    question: str
    history: list[dict[str, str]]
    asker: str
    asker_level: str
    audience_level: str
    level: str
    channel: str
    message_ts: str
    thread_ts: str
    answer: str
    answered: bool
    abstain_reason: str | None
    detail: str
    model: str
    prompt_version: str
    index_commit: str
    retrieved: list[dict[str, Any]]
    citations: list[dict[str, Any]]
    diagnostics: dict[str, Any]
    review: str = "pending"
    golden_id: str = ""
    reviewed_ms: int = 0
    public_channel: bool = False  # asked in a public channel of the workspace

    @property
    def public(self) -> bool:
        return self.public_channel

    def doc_paths(self) -> list[str]:
        """Documents the answer was built from (selected chunks, then citations), in order."""
        paths = [r["doc_path"] for r in self.retrieved] + [c["doc_path"] for c in self.citations]
        return list(dict.fromkeys(paths))


@dataclass(frozen=True)
class AskedInPublic:
    """A question answered in a public channel: its words, the level it was answered at, who
    asked, and the documents its answer cites."""

    question: str
    level: str
    asker: str
    doc_paths: tuple[str, ...] = ()


@dataclass(frozen=True)
class Feedback:
    answer_id: str
    user: str
    vote: str
    button_vote: str = ""
    reaction_vote: str = ""
    reason: str | None = None
    expected: str | None = None
    created_ms: int = 0
    updated_ms: int = 0

    @property
    def withdrawn(self) -> bool:
        return not self.vote


_ANSWER_FIELDS = [f.name for f in fields(LoggedAnswer)]
_FEEDBACK_FIELDS = [f.name for f in fields(Feedback)]


class AnswerLog:
    def __init__(self, db: StateDB, retention_days: int = 90, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.retention_days = retention_days
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- answers -------------------------------------------------------------------------------
    async def record(
        self,
        answer: Answer,
        *,
        asker: str,
        asker_level: str,
        audience_level: str,
        channel: str = "",
        message_ts: str = "",
        thread_ts: str | None = None,
        history: Sequence[tuple[str, str]] = (),
        index_commit: str = "",
        answer_id: str | None = None,
        public_channel: bool = False,
    ) -> str:
        """Log one answer; returns its id (a new one unless given). Levels are level names."""
        answer_id = answer_id or uuid.uuid4().hex[:16]
        row = AnswerRow(
            answer_id=answer_id,
            created_ms=self._now_ms(),
            question=answer.question,
            history=[{"speaker": s, "text": t} for s, t in history],
            asker=asker,
            asker_level=str(asker_level),
            audience_level=str(audience_level),
            level=answer.level,
            channel=channel,
            message_ts=message_ts,
            thread_ts=thread_ts or "",
            public_channel=public_channel,
            answer=answer.answer,
            answered=answer.answered,
            abstain_reason=answer.abstain_reason,
            detail=answer.detail,
            model=answer.model,
            prompt_version=PROMPT_VERSION,
            index_commit=index_commit,
            retrieved=answer.retrieved,
            citations=[asdict(c) for c in answer.citations],
            diagnostics={**asdict(answer.diagnostics),
                         "near_miss": asdict(answer.near_miss) if answer.near_miss else None},
            review="pending",
            golden_id="",
            reviewed_ms=0,
        )
        async with self.db.begin() as session:
            session.add(row)
        return answer_id

    async def get(self, answer_id: str) -> LoggedAnswer | None:
        async with self.db.begin() as session:
            row = await session.get(AnswerRow, answer_id)
            return _answer(row) if row is not None else None

    async def find_by_message(self, channel: str, message_ts: str) -> LoggedAnswer | None:
        """The answer posted as this message, if it is one of ours (a reaction's target)."""
        if not channel or not message_ts:
            return None
        query = select(AnswerRow).where(AnswerRow.channel == channel, AnswerRow.message_ts == message_ts).limit(1)
        async with self.db.begin() as session:
            row = (await session.scalars(query)).first()
            return _answer(row) if row is not None else None

    async def public_questions_since(self, since_ms: int) -> list[AskedInPublic]:
        """The answered questions asked in public channels since `since_ms`. What was asked in a
        DM, the assistant panel or a private conversation is never returned: it is as private as
        the docs."""
        query = select(AnswerRow.question, AnswerRow.level, AnswerRow.asker, AnswerRow.citations).where(
            AnswerRow.created_ms >= since_ms, AnswerRow.answered.is_(True), AnswerRow.public_channel.is_(True))
        async with self.db.begin() as session:
            return [AskedInPublic(question, level, asker, tuple(c["doc_path"] for c in citations or []))
                    for question, level, asker, citations in (await session.execute(query)).all()]

    async def resolve(self, ref: str) -> LoggedAnswer:
        """An answer by id, unique id prefix (at least 6 characters) or golden id `fb-<prefix>`."""
        key = ref.strip().removeprefix("fb-")
        if len(key) < 6 or not all(ch in "0123456789abcdefABCDEF" for ch in key):
            raise AnswerLogError(f"{ref!r} is not an answer id (hex, at least 6 characters)")
        query = select(AnswerRow).where(AnswerRow.answer_id.startswith(key.lower())).limit(2)
        async with self.db.begin() as session:
            rows = [_answer(r) for r in await session.scalars(query)]
        if not rows:
            raise AnswerLogError(f"no logged answer with id {ref!r} (it may have expired)")
        if len(rows) > 1:
            raise AnswerLogError(f"{ref!r} matches several answers: give more of the id")
        return rows[0]

    async def set_review(self, answer_id: str, review: str, golden_id: str = "") -> None:
        _check(review, REVIEWS, "review")
        async with self.db.begin() as session:
            row = await self._require(session, answer_id)
            row.review, row.golden_id, row.reviewed_ms = review, golden_id, self._now_ms()

    async def pending_downvoted(self, max_level: Level | None = None) -> list[tuple[LoggedAnswer, list[Feedback]]]:
        """Answers with an active 👎 not yet promoted or rejected, with their 👎 votes; with
        `max_level`, only answers given at that level or below (an unknown level never passes)."""
        query = (
            select(AnswerRow, FeedbackRow)
            .join(FeedbackRow, FeedbackRow.answer_id == AnswerRow.answer_id)
            .where(AnswerRow.review == "pending", FeedbackRow.vote == "down")
            .order_by(AnswerRow.answer_id, FeedbackRow.created_ms, FeedbackRow.user)
        )
        if max_level is not None:
            query = query.where(AnswerRow.level.in_([level.name for level in Level if level <= max_level]))
        found: dict[str, tuple[LoggedAnswer, list[Feedback]]] = {}
        async with self.db.begin() as session:
            for answer_row, feedback_row in await session.execute(query):
                entry = found.setdefault(answer_row.answer_id, (_answer(answer_row), []))
                entry[1].append(_feedback(feedback_row))
        return list(found.values())

    # -- feedback ------------------------------------------------------------------------------
    async def add_feedback(
        self,
        answer_id: str,
        user: str,
        vote: Vote,
        source: Source,
        reason: str | None = None,
        expected: str | None = None,
    ) -> Feedback:
        """Set `user`'s vote on an answer, given by `source`; reason/expected overwrite when given.

        Idempotent: one row per (answer, user) whatever the number of clicks and reactions."""
        _check(vote, VOTES, "vote")
        _check(source, SOURCES, "feedback source")
        if reason is not None:
            _check(reason, REASONS, "reason")

        def apply(row: FeedbackRow) -> None:
            setattr(row, f"{source}_vote", vote)
            row.vote = vote
            if reason is not None:
                row.reason = reason
            if expected is not None:
                row.expected = expected.strip() or None

        # The person's first vote may arrive twice at once (button and reaction, two replicas):
        # the insert that loses is run again, and updates the winner's row.
        @retry_insert_race
        async def attempt() -> Feedback:
            async with self.db.begin() as session:
                await self._require(session, answer_id)
                row = await session.get(FeedbackRow, (answer_id, user), with_for_update=True)
                now = self._now_ms()
                if row is None:
                    row = FeedbackRow(answer_id=answer_id, user=user, vote="", button_vote="",
                                      reaction_vote="", created_ms=now)
                    session.add(row)
                apply(row)
                row.updated_ms = now
                return _feedback(row)

        return await attempt()

    async def explain(self, answer_id: str, user: str, reason: str, expected: str | None = None) -> Feedback:
        """What was wrong, from the 👎 form: updates the person's existing record without voting
        again (a form sent after the reaction was removed leaves the vote withdrawn)."""
        _check(reason, REASONS, "reason")
        async with self.db.begin() as session:
            row = await session.get(FeedbackRow, (answer_id, user), with_for_update=True)
            if row is None:
                raise AnswerLogError(f"{user} has no feedback on answer {answer_id} to explain")
            row.reason = reason
            row.expected = (expected or "").strip() or None
            row.updated_ms = self._now_ms()
            return _feedback(row)

    async def withdraw_reaction(self, answer_id: str, user: str, vote: Vote | None = None) -> Feedback | None:
        """The person removed their reaction (of `vote`, if given): their vote falls back to their
        button vote, or is withdrawn. None when that reaction vote was not theirs (no change)."""
        async with self.db.begin() as session:
            row = await session.get(FeedbackRow, (answer_id, user), with_for_update=True)
            if row is None or not row.reaction_vote or vote not in (None, row.reaction_vote):
                return None
            row.reaction_vote = ""
            row.vote = row.button_vote
            row.updated_ms = self._now_ms()
            return _feedback(row)

    async def feedback(self, answer_id: str | None = None, *, active: bool = True) -> list[Feedback]:
        """Feedback rows (of one answer, or all), oldest first; withdrawn ones only if not `active`."""
        query = select(FeedbackRow).order_by(FeedbackRow.created_ms, FeedbackRow.user)
        if answer_id is not None:
            query = query.where(FeedbackRow.answer_id == answer_id)
        if active:
            query = query.where(FeedbackRow.vote != "")
        async with self.db.begin() as session:
            return [_feedback(row) for row in await session.scalars(query)]

    @staticmethod
    async def _require(session: AsyncSession, answer_id: str) -> AnswerRow:
        row = await session.get(AnswerRow, answer_id)
        if row is None:
            raise AnswerLogError(f"no logged answer with id {answer_id!r} (it may have expired)")
        return row

    # -- retention -----------------------------------------------------------------------------
    async def prune(self) -> int:
        """Delete answers older than the retention, with the feedback on them, except those
        with an active 👎 still pending review. Returns the number of answers deleted. A
        retention of 0 days keeps everything."""
        if self.retention_days <= 0:
            return 0
        cutoff = self._now_ms() - self.retention_days * _DAY_MS
        unreviewed_down = and_(
            AnswerRow.review == "pending",
            exists().where(FeedbackRow.answer_id == AnswerRow.answer_id, FeedbackRow.vote == "down"),
        )
        expired = select(AnswerRow.answer_id).where(AnswerRow.created_ms < cutoff, ~unreviewed_down)
        async with self.db.begin() as session:
            ids = list(await session.scalars(expired))
            for start in range(0, len(ids), _DELETE_BATCH):
                batch = ids[start:start + _DELETE_BATCH]
                await session.execute(delete(FeedbackRow).where(FeedbackRow.answer_id.in_(batch)))
                await session.execute(delete(AnswerRow).where(AnswerRow.answer_id.in_(batch)))
        return len(ids)


def _check(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise AnswerLogError(f"unknown {what} {value!r} (expected one of: {', '.join(allowed)})")


def _answer(row: AnswerRow) -> LoggedAnswer:
    return LoggedAnswer(**{name: getattr(row, name) for name in _ANSWER_FIELDS})


def _feedback(row: FeedbackRow) -> Feedback:
    return Feedback(**{name: getattr(row, name) for name in _FEEDBACK_FIELDS})
