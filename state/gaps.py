"""What the answer log says about the docs: the questions they could not answer, the 👎 and the
pages answers cite, over a window of time (the docs-gaps report and digest, insights/gaps.py).

Every item carries the level of the conversation it was asked in (`context_level`): a question
is shown only to someone whose level is at least that, since the question itself may say what a
document it was asked about says. In a public channel of the workspace that is the level the
answer was given at (everyone there may read the question and the answer); anywhere else (a
DM, the assistant panel, a private or shared channel, an answer only the asker saw) it is the
asker's own level then, as recorded with the answer. Nothing is stored here: these are reads of
the answer log, so its retention (DOCSBOT_ANSWER_LOG_DAYS) applies to them as to answers.

What people write is as private as the docs, so a question's words have a rule of their own
(`quoted`): only a public channel is public. A question asked in a DM, the assistant panel, a
private or shared channel, or on any surface that does not record itself as a public channel
(rows logged before the answer log knew, too) is shown to anyone but its asker as a count only.
A public-channel question is quoted to others; in the weekly digest, pushed to people who did not
ask for it, only once SEVERAL different people asked it (its group, or the same words) in public.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from sqlalchemy import select

from rag import Level
from state.answers import AnswerRow, FeedbackRow
from state.db import StateDB

UNANSWERED = ("no_match", "declined")  # abstentions that say the docs lack something (not access, not outages)
SEVERAL = 3  # different people who asked a question in public before the digest or a suggestion quotes it


@dataclass(frozen=True)
class Unanswered:
    answer_id: str
    created_ms: int
    question: str
    asker: str
    context: Level
    kind: str  # "no_match" (nothing close), "below_gate" (close, but not answerable), "declined" (by the model)
    doc_path: str  # the closest section's document, when the log has one; else ""
    public: bool = False  # asked in a public channel of the workspace


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
    public: bool = False  # asked in a public channel of the workspace
    expected_by: str = ""  # who wrote `expected`


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


@dataclass(frozen=True)
class Reader:
    """Who a report is for. `user` reads their own questions word for word ("": nobody in
    particular, as for `docsbot report`); `several`: how many different people must have asked a
    public question before it is quoted to them (1 on demand, SEVERAL in the digest)."""

    user: str = ""
    several: int = 1


class Asked(Protocol):
    @property
    def asker(self) -> str: ...

    @property
    def public(self) -> bool: ...


A = TypeVar("A", bound=Asked)


def quoted(reader: Reader, asked: Sequence[A], public_askers: Iterable[str] = ()) -> list[A]:
    """The questions of `asked` (one group, or one question) whose words `reader` may read: their
    own, and those asked in a public channel once at least `reader.several` different people asked
    them in public (those of `asked`, and `public_askers` who asked the same elsewhere in the log)."""
    crowd = {a.asker for a in asked if a.public and a.asker} | set(public_askers)
    return [a for a in asked if (reader.user and a.asker == reader.user) or (a.public and len(crowd) >= reader.several)]


def question_key(text: str) -> str:
    """A question as it is counted: case, spacing and a trailing '?' do not matter."""
    return " ".join(text.split()).lower().rstrip("?").strip()


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
                           _first_doc(_near_miss(row.diagnostics), row.retrieved), bool(row.public_channel))
                for row in rows]

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
                    bool(answer.public_channel),
                    vote.user if vote.expected else (before.expected_by if before else ""),
                )
        return list(found.values())

    async def public_askers(self, since_ms: int, until_ms: int) -> dict[str, set[str]]:
        """question_key -> the people who asked it in a public channel in [since_ms, until_ms)."""
        query = select(AnswerRow.question, AnswerRow.asker).where(
            AnswerRow.created_ms >= since_ms, AnswerRow.created_ms < until_ms, AnswerRow.public_channel.is_(True))
        found: dict[str, set[str]] = {}
        async with self.db.begin() as session:
            for question, asker in (await session.execute(query)).all():
                if asker:
                    found.setdefault(question_key(question), set()).add(asker)
        return found

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
