"""What the answer log says about the docs: the questions they could not answer, the 👎 and the
pages answers cite, over a window of time (the docs-gaps report and digest, bot/gaps.py).

Every item carries the level of the conversation it was asked in (`context_level`): a question
is shown only to someone whose level is at least that, since the question itself may say what a
document it was asked about says. In a public channel of the workspace that is the level the
answer was given at (everyone there may read the question and the answer); anywhere else (a
DM, the assistant panel, a private or shared channel, an answer only the asker saw) it is the
asker's own level then, as recorded with the answer. Nothing is stored here: these are reads of
the answer log, so its retention (DOCSBOT_ANSWER_LOG_DAYS) applies to them as to answers.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from rag import Level
from state.answers import AnswerRow, FeedbackRow
from state.db import StateDB

UNANSWERED = ("no_match", "declined")  # abstentions that say the docs lack something (not access, not outages)


@dataclass(frozen=True)
class Unanswered:
    answer_id: str
    created_ms: int
    question: str
    asker: str
    context: Level
    kind: str  # "no_match" (nothing close), "below_gate" (close, but not answerable), "declined" (by the model)
    doc_path: str  # the closest section's document, when the log has one; else ""


@dataclass(frozen=True)
class Downvote:
    answer_id: str
    created_ms: int  # when the 👎 was given (or last explained)
    question: str
    asker: str
    context: Level
    reason: str  # "wrong", "outdated", ... or "" when the person gave none
    expected: str
    doc_path: str  # the answer's first cited (else first selected) document; "" for none
    voters: int


@dataclass(frozen=True)
class Cited:
    """One answered question: the documents it cited, in order, and its context's level."""

    created_ms: int
    doc_paths: tuple[str, ...]
    context: Level


def context_level(asker_level: str, level: str, public_channel: bool) -> Level:
    """The level of the conversation a question was asked in (see the module docstring); a level
    the log does not know is `restricted`, so it is shown to as few people as possible."""
    try:
        return Level.parse(level if public_channel else asker_level)
    except ValueError:
        return Level.restricted


def _context(row: Any) -> Level:
    return context_level(row.asker_level, row.level, bool(row.public_channel))


def _kind(abstain_reason: str | None, detail: str) -> str:
    if abstain_reason == "declined":
        return "declined"
    return "below_gate" if detail.startswith("answerability") else "no_match"


def _first_doc(*lists: list[dict[str, Any]] | None) -> str:
    return next((path for items in lists for path in _paths(items)), "")


def _near_miss(diagnostics: dict[str, Any] | None) -> list[dict[str, Any]]:
    near = (diagnostics or {}).get("near_miss")
    return [near] if isinstance(near, dict) else []


class GapLog:
    def __init__(self, db: StateDB) -> None:
        self.db = db

    async def unanswered(self, since_ms: int, until_ms: int) -> list[Unanswered]:
        """Questions declined for want of docs in [since_ms, until_ms), oldest first."""
        query = select(
            AnswerRow.answer_id, AnswerRow.created_ms, AnswerRow.question, AnswerRow.asker, AnswerRow.asker_level,
            AnswerRow.level, AnswerRow.public_channel, AnswerRow.abstain_reason, AnswerRow.detail,
            AnswerRow.retrieved, AnswerRow.diagnostics,
        ).where(AnswerRow.created_ms >= since_ms, AnswerRow.created_ms < until_ms, AnswerRow.answered.is_(False),
                AnswerRow.abstain_reason.in_(UNANSWERED)).order_by(AnswerRow.created_ms, AnswerRow.answer_id)
        async with self.db.begin() as session:
            rows = (await session.execute(query)).all()
        return [Unanswered(row.answer_id, row.created_ms, row.question, row.asker, _context(row),
                           _kind(row.abstain_reason, row.detail or ""),
                           _first_doc(_near_miss(row.diagnostics), row.retrieved)) for row in rows]

    async def downvotes(self, since_ms: int, until_ms: int) -> list[Downvote]:
        """Answers with an active 👎 given (or explained) in [since_ms, until_ms): one entry per
        answer, with the most recent reason and expected answer any of its voters gave."""
        query = (
            select(AnswerRow, FeedbackRow)
            .join(FeedbackRow, FeedbackRow.answer_id == AnswerRow.answer_id)
            .where(FeedbackRow.vote == "down", FeedbackRow.updated_ms >= since_ms, FeedbackRow.updated_ms < until_ms)
            .order_by(FeedbackRow.updated_ms, FeedbackRow.user)
        )
        found: dict[str, Downvote] = {}
        async with self.db.begin() as session:
            for answer, vote in await session.execute(query):
                before = found.get(answer.answer_id)
                found[answer.answer_id] = Downvote(
                    answer.answer_id, vote.updated_ms, answer.question, answer.asker, _context(answer),
                    vote.reason or (before.reason if before else ""),
                    vote.expected or (before.expected if before else ""),
                    _first_doc(answer.citations, answer.retrieved), (before.voters if before else 0) + 1,
                )
        return list(found.values())

    async def cited(self, since_ms: int, until_ms: int) -> list[Cited]:
        """The answered questions of [since_ms, until_ms), with the documents each cited."""
        query = select(AnswerRow.created_ms, AnswerRow.citations, AnswerRow.asker_level, AnswerRow.level,
                       AnswerRow.public_channel).where(
            AnswerRow.created_ms >= since_ms, AnswerRow.created_ms < until_ms, AnswerRow.answered.is_(True))
        async with self.db.begin() as session:
            rows = (await session.execute(query)).all()
        return [Cited(row.created_ms, tuple(dict.fromkeys(_paths(row.citations))), _context(row)) for row in rows]


def _paths(items: list[dict[str, Any]] | None) -> list[str]:
    return [str(item["doc_path"]) for item in items or [] if item.get("doc_path")]
