"""Suggested prompts for the assistant panel: the questions asked most often this month, else one
question per docs area; only what the asker's own level could have been answered from.

The two sources are plain lists, so where they are read from (the answer log, the index) is
easy to swap."""
from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterable

from rag.levels import Level
from rag.store import Store
from state.answers import AnswerLog

MAX_PROMPTS = 4  # Slack shows at most four
MONTH_S = 30 * 24 * 3600
_TITLE_CHARS = 75


def most_asked(recent: Iterable[tuple[str, str]], level: Level, limit: int = MAX_PROMPTS) -> list[str]:
    """The most frequent of `recent` (question, level answered at), counting questions that
    differ only in case, spacing or a trailing '?' as one. A question answered above `level`
    is never suggested: its wording could tell what those docs are about."""
    counts: Counter[str] = Counter()
    spelling: dict[str, str] = {}
    for question, answered_at in recent:
        if _level(answered_at) > level:
            continue
        key = " ".join(question.lower().rstrip("?").split())
        if key:
            counts[key] += 1
            spelling.setdefault(key, " ".join(question.split()))
    return [spelling[key] for key, _ in counts.most_common(limit)]


def one_per_area(docs: Iterable[tuple[str, str, int]], level: Level, limit: int = MAX_PROMPTS) -> list[str]:
    """One question per docs area, about the first document (by title) the level may read;
    `docs` is (area, title, access rank)."""
    firsts: dict[str, str] = {}
    for area, title, rank in sorted(docs, key=lambda d: (d[0], d[1])):
        if area and rank <= int(level):
            firsts.setdefault(area, title)
    return [f"What do the docs say about {title}?" for title in list(firsts.values())[:limit]]


async def suggested_prompts(answer_log: AnswerLog, store: Store, level: Level) -> list[dict[str, str]]:
    """Prompts for `assistant.threads.setSuggestedPrompts` (title and message)."""
    since_ms = int((time.time() - MONTH_S) * 1000)
    questions = most_asked(await answer_log.questions_since(since_ms), level)
    if not questions:
        columns = await asyncio.to_thread(store.doc_columns, "area", "title", "access_rank")
        questions = one_per_area(columns.values(), level)
    return [{"title": _title(q), "message": q} for q in questions]


def _level(name: str) -> Level:
    """An unknown level name counts as the highest (fail closed)."""
    try:
        return Level.parse(name)
    except ValueError:
        return Level.restricted


def _title(question: str) -> str:
    return question if len(question) <= _TITLE_CHARS else question[: _TITLE_CHARS - 1].rstrip() + "…"
