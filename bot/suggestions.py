"""Suggested prompts for the assistant panel, the agent view and the Home tab: questions asked this
month (this week, for a channel the agent view looks at) in public channels by several different
people, then one question per docs area; only what the viewer's level could have been answered
from and, for a channel with a scope, only what its documents answered or hold.

What people write is as private as the docs (state/gaps.py, the rule the docs-gaps report follows
too): a question asked anywhere but a public channel is never suggested to anyone, nor one fewer
than SEVERAL people asked (it may say something about them), nor a long one; a suggestion is the
question's text and nothing else.

The two sources are plain lists, so where they are read from (the answer log, the index) is
easy to swap."""
from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Iterable

from rag import Index, Level, Scope
from state.answers import AnswerLog, AskedInPublic
from state.db import StateUnavailable
from state.gaps import SEVERAL, question_key

log = logging.getLogger(__name__)

MAX_PROMPTS = 4  # Slack shows at most four
MONTH_S = 30 * 24 * 3600
WEEK_S = 7 * 24 * 3600
MAX_QUESTION_CHARS = 120  # a longer question tends to carry someone's circumstances
_TITLE_CHARS = 75


def most_asked(recent: Iterable[AskedInPublic], level: Level, limit: int = MAX_PROMPTS,
               scope: Scope | None = None) -> list[str]:
    """The questions of `recent` that at least SEVERAL different people asked, most askers
    first, counting questions that differ only in case, spacing or a trailing '?' as one. A
    question answered above `level` is never suggested: its wording could tell what those docs
    are about. With a `scope`, only questions whose answers cite a document of it."""
    askers: dict[str, set[str]] = {}
    spelling: dict[str, str] = {}
    for question, answered_at, asker, doc_paths in ((a.question, a.level, a.asker, a.doc_paths) for a in recent):
        if scope is not None and not any(scope.matches(path) for path in doc_paths):
            continue
        text = " ".join(question.split())
        if _level(answered_at) > level or not asker or len(text) > MAX_QUESTION_CHARS:
            continue
        key = question_key(text)
        if key:
            askers.setdefault(key, set()).add(asker)
            spelling.setdefault(key, text)
    counts = Counter({key: len(people) for key, people in askers.items() if len(people) >= SEVERAL})
    return [spelling[key] for key, _ in counts.most_common(limit)]


def one_per_area(docs: Iterable[tuple[str, str, int]], level: Level, limit: int = MAX_PROMPTS) -> list[str]:
    """One question per docs area, about the first document (by title) the level may read;
    `docs` is (area, title, access rank)."""
    firsts: dict[str, str] = {}
    for area, title, rank in sorted(docs, key=lambda d: (d[0], d[1])):
        if area and rank <= int(level):
            firsts.setdefault(area, title)
    return [f"What do the docs say about {title}?" for title in list(firsts.values())[:limit]]


async def suggested_prompts(answer_log: AnswerLog, store: Index, level: Level, scope: Scope | None = None,
                            since_s: float = MONTH_S) -> list[dict[str, str]]:
    """Prompts for `assistant.threads.setSuggestedPrompts` (title and message): the popular public
    questions of the last `since_s`, the remaining places filled with one question per docs area
    (within `scope`, when given)."""
    since_ms = int((time.time() - since_s) * 1000)
    try:
        questions = most_asked(await answer_log.public_questions_since(since_ms), level, scope=scope)
    except StateUnavailable as exc:
        log.warning("suggesting from the docs alone: %s", exc)
        questions = []
    if len(questions) < MAX_PROMPTS:
        columns = await asyncio.to_thread(store.doc_columns, "area", "title", "access_rank")
        docs = [values for path, values in columns.items() if scope is None or scope.matches(path)]
        questions += one_per_area(docs, level, MAX_PROMPTS - len(questions))
    return [{"title": _title(q), "message": q} for q in questions]


def _level(name: str) -> Level:
    """An unknown level name counts as the highest (fail closed)."""
    try:
        return Level.parse(name)
    except ValueError:
        return Level.restricted


def _title(question: str) -> str:
    return question if len(question) <= _TITLE_CHARS else question[: _TITLE_CHARS - 1].rstrip() + "…"
