"""The answer log: every posted answer and the feedback on it, durably, beside the index.

Two LanceDB tables in the index's database (same `DOCSBOT_DATA_DIR` URI):

* `answers`, one row per answer: the question and the thread context it was answered with, who
  asked and at which levels, where it was posted (a conversation id and message ts as plain
  strings: nothing here knows Slack), the chunks selected for it with their versions, commits and
  text hashes, the answer, citations, abstention, model, prompt version, indexed commit, timings,
  and the review outcome of a 👎 (`pending` until promoted to the golden set or rejected).
* `feedback`, one row per (answer, user): a person's current vote. A button click and a reaction
  are two ways of voting, tracked separately so that repeated clicks or reactions only rewrite
  the same row. The effective vote is the most recent one given; removing the reaction falls
  back to the button vote, and with no button vote the row is *withdrawn* (vote ""), keeping its
  reason in case the person reacts again. A modal's reason and expected answer update the row.

Nothing secret is stored: user ids, never emails or tokens. Rows older than the retention
(`DOCSBOT_ANSWER_LOG_DAYS`) are deleted, with the feedback on them, by `prune()`: called by
the first write of a process, then hourly and every COMPACT_EVERY_WRITES writes.
"""
from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import timedelta
from typing import Any, Literal

import pyarrow as pa

from rag.answer import Answer
from rag.prompt import PROMPT_VERSION
from rag.store import CLEANUP_AFTER, Store, lancedb, sql_list  # lancedb imported after LANCE_LOG is set

ANSWERS, FEEDBACK = "answers", "feedback"
VOTES = ("up", "down")
SOURCES = ("button", "reaction")
REASONS = ("wrong", "outdated", "missing", "not_allowed", "other")
REVIEWS = ("pending", "promoted", "rejected")
PRUNE_EVERY_S = 3600.0
# Each write adds a small fragment; lookups slow down as they pile up (72 ms for a message
# lookup after 300 answers, 10 ms compacted), so the tables are compacted this often.
COMPACT_EVERY_WRITES = 100
_DAY_MS = 86_400_000

Vote = Literal["up", "down"]
Source = Literal["button", "reaction"]

ANSWER_SCHEMA = pa.schema([
    ("answer_id", pa.string()),
    ("created_ms", pa.int64()),
    ("question", pa.string()),
    ("history", pa.string()),  # JSON [{"speaker", "text"}], the golden-set format
    ("asker", pa.string()),
    ("asker_level", pa.string()),
    ("audience_level", pa.string()),
    ("level", pa.string()),  # the level answered at: min(asker, audience)
    ("channel", pa.string()),
    ("message_ts", pa.string()),
    ("thread_ts", pa.string()),
    ("answer", pa.string()),
    ("answered", pa.bool_()),
    ("abstain_reason", pa.string()),
    ("detail", pa.string()),
    ("model", pa.string()),
    ("prompt_version", pa.string()),
    ("index_commit", pa.string()),
    ("retrieved", pa.string()),  # JSON: the selected chunks (Answer.retrieved)
    ("citations", pa.string()),  # JSON: Answer.citations
    ("diagnostics", pa.string()),  # JSON: counts and timings
    ("review", pa.string()),
    ("golden_id", pa.string()),
    ("reviewed_ms", pa.int64()),
])

FEEDBACK_SCHEMA = pa.schema([
    ("feedback_id", pa.string()),  # answer_id/user: the merge key that makes votes idempotent
    ("answer_id", pa.string()),
    ("user", pa.string()),
    ("vote", pa.string()),  # effective vote; "" once withdrawn
    ("button_vote", pa.string()),
    ("reaction_vote", pa.string()),
    ("reason", pa.string()),
    ("expected", pa.string()),
    ("created_ms", pa.int64()),
    ("updated_ms", pa.int64()),
    ("answer_created_ms", pa.int64()),  # for retention: feedback expires with its answer
])


class AnswerLogError(ValueError):
    """Bad input to the log (unknown answer, unknown vote or reason); the message says which."""


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

    def doc_paths(self) -> list[str]:
        """Documents the answer was built from (selected chunks, then citations), in order."""
        paths = [r["doc_path"] for r in self.retrieved] + [c["doc_path"] for c in self.citations]
        return list(dict.fromkeys(paths))


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
    answer_created_ms: int = 0

    @property
    def withdrawn(self) -> bool:
        return not self.vote


class AnswerLog:
    """Thread-safe (one lock per instance for writes); the bot calls it through `asyncio.to_thread`."""

    def __init__(self, uri: str, retention_days: int = 90, clock: Callable[[], float] = time.time) -> None:
        self.uri = uri
        self.retention_days = retention_days
        self._clock = clock
        self._lock = threading.RLock()  # a write may compact while holding it
        self._index = Store(uri)  # same database: the indexed commit is in its meta table
        # Every read sees the latest commit: the bot writes while `python -m eval` reviews.
        db = lancedb.connect(uri, read_consistency_interval=timedelta(0))
        self._answers = db.create_table(ANSWERS, schema=ANSWER_SCHEMA, exist_ok=True)
        self._feedback = db.create_table(FEEDBACK, schema=FEEDBACK_SCHEMA, exist_ok=True)
        self._last_prune = float("-inf")
        self._writes = 0

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    # -- answers -------------------------------------------------------------------------------
    def record(
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
        answer_id: str | None = None,
    ) -> str:
        """Log one answer; returns its id (a new one unless given). Levels are level names."""
        answer_id = answer_id or uuid.uuid4().hex[:16]
        row = {
            "answer_id": answer_id,
            "created_ms": self._now_ms(),
            "question": answer.question,
            "history": _dumps([{"speaker": s, "text": t} for s, t in history]),
            "asker": asker,
            "asker_level": str(asker_level),
            "audience_level": str(audience_level),
            "level": answer.level,
            "channel": channel,
            "message_ts": message_ts,
            "thread_ts": thread_ts or "",
            "answer": answer.answer,
            "answered": answer.answered,
            "abstain_reason": answer.abstain_reason,
            "detail": answer.detail,
            "model": answer.model,
            "prompt_version": PROMPT_VERSION,
            "index_commit": self._index.meta().get("commit") or "",
            "retrieved": _dumps(answer.retrieved),
            "citations": _dumps([asdict(c) for c in answer.citations]),
            "diagnostics": _dumps(asdict(answer.diagnostics)),
            "review": "pending",
            "golden_id": "",
            "reviewed_ms": 0,
        }
        with self._lock:
            self._answers.add(pa.Table.from_pylist([row], schema=ANSWER_SCHEMA))
            self._wrote()
        return answer_id

    def set_message(self, answer_id: str, channel: str, message_ts: str) -> None:
        """Where the answer ended up (e.g. logged before its message was posted)."""
        self._require(answer_id)
        with self._lock:
            self._answers.update(
                where=_eq("answer_id", answer_id), values={"channel": channel, "message_ts": message_ts}
            )
            self._wrote()

    def get(self, answer_id: str) -> LoggedAnswer | None:
        rows = _select(self._answers, _eq("answer_id", answer_id), limit=1)
        return _answer(rows[0]) if rows else None

    def find_by_message(self, channel: str, message_ts: str) -> LoggedAnswer | None:
        """The answer posted as this message, if it is one of ours (a reaction's target)."""
        if not channel or not message_ts:
            return None
        rows = _select(self._answers, f"{_eq('channel', channel)} AND {_eq('message_ts', message_ts)}", limit=1)
        return _answer(rows[0]) if rows else None

    def questions_since(self, since_ms: int) -> list[tuple[str, str]]:
        """(question, level answered at) of every answered question logged since `since_ms`."""
        table = self._answers.search().where(f"created_ms >= {int(since_ms)} AND answered")
        rows = table.select(["question", "level"]).limit(None).to_arrow().to_pylist()
        return [(row["question"], row["level"]) for row in rows]

    def answers(self, ids: Iterable[str]) -> dict[str, LoggedAnswer]:
        ids = sorted(set(ids))
        if not ids:
            return {}
        rows = _select(self._answers, f"answer_id IN ({sql_list(ids)})")
        return {row["answer_id"]: _answer(row) for row in rows}

    def resolve(self, ref: str) -> LoggedAnswer:
        """An answer by id, unique id prefix (at least 6 characters) or golden id `fb-<prefix>`."""
        key = ref.strip().removeprefix("fb-")
        if len(key) < 6 or not all(ch in "0123456789abcdefABCDEF" for ch in key):
            raise AnswerLogError(f"{ref!r} is not an answer id (hex, at least 6 characters)")
        rows = _select(self._answers, f"answer_id LIKE '{key.lower()}%'", limit=2)
        if not rows:
            raise AnswerLogError(f"no logged answer with id {ref!r} (it may have expired)")
        if len(rows) > 1:
            raise AnswerLogError(f"{ref!r} matches several answers: give more of the id")
        return _answer(rows[0])

    def set_review(self, answer_id: str, review: str, golden_id: str = "") -> None:
        _check(review, REVIEWS, "review")
        with self._lock:
            self._answers.update(
                where=_eq("answer_id", answer_id),
                values={"review": review, "golden_id": golden_id, "reviewed_ms": self._now_ms()},
            )
            self._wrote()

    # -- feedback ------------------------------------------------------------------------------
    def add_feedback(
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
        answer = self._require(answer_id)
        with self._lock:
            old = self._feedback_row(answer_id, user)
            now = self._now_ms()
            row = old or {
                "feedback_id": f"{answer_id}/{user}", "answer_id": answer_id, "user": user, "vote": "",
                "button_vote": "", "reaction_vote": "", "reason": None, "expected": None,
                "created_ms": now, "updated_ms": now, "answer_created_ms": answer.created_ms,
            }
            row[f"{source}_vote"] = vote
            row["vote"] = vote
            if reason is not None:
                row["reason"] = reason
            if expected is not None:
                row["expected"] = expected.strip() or None
            row["updated_ms"] = now
            self._write_feedback(row)
        return _feedback(row)

    def explain(self, answer_id: str, user: str, reason: str, expected: str | None = None) -> Feedback:
        """What was wrong, from the 👎 form: updates the person's existing record without voting
        again (a form sent after the reaction was removed leaves the vote withdrawn)."""
        _check(reason, REASONS, "reason")
        with self._lock:
            row = self._feedback_row(answer_id, user)
            if row is None:
                raise AnswerLogError(f"{user} has no feedback on answer {answer_id} to explain")
            row["reason"] = reason
            row["expected"] = (expected or "").strip() or None
            row["updated_ms"] = self._now_ms()
            self._write_feedback(row)
        return _feedback(row)

    def withdraw_reaction(self, answer_id: str, user: str, vote: Vote | None = None) -> Feedback | None:
        """The person removed their reaction (of `vote`, if given): their vote falls back to their
        button vote, or is withdrawn. None when that reaction vote was not theirs (no change)."""
        with self._lock:
            row = self._feedback_row(answer_id, user)
            if row is None or not row["reaction_vote"] or vote not in (None, row["reaction_vote"]):
                return None
            row["reaction_vote"] = ""
            row["vote"] = row["button_vote"]
            row["updated_ms"] = self._now_ms()
            self._write_feedback(row)
        return _feedback(row)

    def feedback(self, answer_id: str | None = None, *, active: bool = True) -> list[Feedback]:
        """Feedback rows (of one answer, or all), oldest first; withdrawn ones only if not `active`."""
        clauses = [_eq("answer_id", answer_id)] if answer_id is not None else []
        if active:
            clauses.append("vote != ''")
        rows = _select(self._feedback, " AND ".join(clauses) or None)
        return sorted((_feedback(r) for r in rows), key=lambda f: (f.created_ms, f.user))

    def _feedback_row(self, answer_id: str, user: str) -> dict[str, Any] | None:
        rows = _select(self._feedback, _eq("feedback_id", f"{answer_id}/{user}"), limit=1)
        return rows[0] if rows else None

    def _write_feedback(self, row: dict[str, Any]) -> None:
        data = pa.Table.from_pylist([row], schema=FEEDBACK_SCHEMA)
        self._feedback.merge_insert("feedback_id").when_matched_update_all().when_not_matched_insert_all().execute(data)
        self._wrote()

    def _require(self, answer_id: str) -> LoggedAnswer:
        answer = self.get(answer_id)
        if answer is None:
            raise AnswerLogError(f"no logged answer with id {answer_id!r} (it may have expired)")
        return answer

    # -- retention -----------------------------------------------------------------------------
    def prune(self) -> int:
        """Delete answers older than the retention, and the feedback on them; compact both
        tables. Returns the number of answers deleted. A retention of 0 days keeps everything."""
        cutoff = self._now_ms() - self.retention_days * _DAY_MS
        with self._lock:
            self._last_prune, self._writes = self._clock(), 0
            expired = self._answers.count_rows(f"created_ms < {cutoff}") if self.retention_days > 0 else 0
            if expired:
                self._answers.delete(f"created_ms < {cutoff}")
                self._feedback.delete(f"answer_created_ms < {cutoff}")
            for table in (self._answers, self._feedback):
                table.optimize(cleanup_older_than=CLEANUP_AFTER)
        return expired

    def _wrote(self) -> None:
        """Count a write (under the lock); prune and compact when due."""
        self._writes += 1
        if self._writes >= COMPACT_EVERY_WRITES or self._clock() - self._last_prune >= PRUNE_EVERY_S:
            self.prune()


def _check(value: str, allowed: tuple[str, ...], what: str) -> None:
    if value not in allowed:
        raise AnswerLogError(f"unknown {what} {value!r} (expected one of: {', '.join(allowed)})")


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _eq(column: str, value: str) -> str:
    return f"{column} = {sql_list([value])}"


def _select(table: Any, where: str | None, limit: int | None = None) -> list[dict[str, Any]]:
    query = table.search()
    if where:
        query = query.where(where)
    return query.limit(limit).to_arrow().to_pylist()


def _answer(row: dict[str, Any]) -> LoggedAnswer:
    row = dict(row)
    for name in ("history", "retrieved", "citations", "diagnostics"):
        row[name] = json.loads(row[name])
    return LoggedAnswer(**row)


def _feedback(row: dict[str, Any]) -> Feedback:
    return Feedback(**{k: v for k, v in row.items() if k != "feedback_id"})
