"""What an agent may do with the docs: search them, ask them, read a page; always at its caller's
level, the way Slack answers a person (the index filters by level inside each search, before the
top k are taken, so nothing above the level is ever ranked, let alone returned).

A page above the caller's level and a page that does not exist are the same answer, word for
word: a caller learns nothing about what it may not read, not even that it is there.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from agents import SURFACE
from agents.untrusted import fenced, suspected
from foundation.observability import metrics
from rag import ABSTAIN_MESSAGES, Answer, Candidate, Citation, EmbeddingError, Engine, Intents, Level, StoreError

MAX_LIMIT = 20  # passages one search_docs returns at most
MAX_INPUT_CHARS = 2_000  # a query, question, path or section longer than this is refused


class ToolInputError(ValueError):
    """The arguments cannot be used, or there is nothing to return; one line the agent can act on."""


@dataclass(frozen=True)
class Caller:
    """Who is calling, as established for this call: the Slack user a token belongs to, or the
    one `docsbot mcp --user` names ("" when none), and the level they read at now."""

    user_id: str
    level: Level


# Logs an answer given through MCP (bot-free: the composition root decides where it goes).
Recorder = Callable[[Answer, Caller], Awaitable[None]]


def not_found(path: str) -> str:
    """The one answer for a page that is missing and for a page above the caller's level."""
    return f"no page at {path!r}: use a doc_path that search_docs returned"


class DocsTools:
    def __init__(self, engine: Engine, record: Recorder | None = None) -> None:
        self.engine = engine
        self.record = record

    async def search(self, query: str, limit: int, caller: Caller) -> dict[str, Any]:
        """The best passages for `query` at the caller's level, best first: MMR's selection, then
        the rest of what passed the similarity floor, up to `limit` (1..MAX_LIMIT)."""
        text = _checked(query, "query")
        limit = max(1, min(limit, MAX_LIMIT))
        try:
            retrieval, _, timings = await self.engine.search(text, caller.level)
            chosen = list(retrieval.selected[:limit])
            have = {c.chunk_id for c in chosen}
            more = [c for c in retrieval.passed if c.chunk_id not in have][:limit - len(chosen)]
            rows = await self.engine.store.rows([c.chunk_id for c in more])
        except (StoreError, EmbeddingError):
            raise ToolInputError(ABSTAIN_MESSAGES["index_unavailable"]) from None
        chosen += [replace(c, row=rows[c.chunk_id]) for c in more if c.chunk_id in rows]
        passages = await asyncio.to_thread(  # the meaning check embeds sentences: off the event loop
            lambda: [passage(self.engine.citation(c), c.row["text"], intents=self.engine.intents) for c in chosen])
        return {"query": text, "level": caller.level.name, "timings_ms": timings, "passages": passages}

    async def ask(self, question: str, caller: Caller) -> dict[str, Any]:
        """What `docsbot ask --json` prints for this question at the caller's level; logged
        privately (state/gaps.py counts it by level and never shows it to anyone)."""
        answer = await self.engine.ask(_checked(question, "question"), caller.level)
        metrics.observe_answer(SURFACE, answer.answered, answer.abstain_reason, answer.diagnostics.timings_ms)
        if self.record is not None:
            await self.record(answer, caller)
        return answer.to_json()

    async def read(self, path: str, section: str, caller: Caller) -> dict[str, Any]:
        """A page (or one section of it) as indexed, at the caller's level: its text (fenced, and
        flagged as a search's passages are) and where it was read (version, commit, links,
        freshness warning)."""
        wanted = _checked(path, "path")
        section = section.strip()
        if len(section) > MAX_INPUT_CHARS:
            raise ToolInputError(f"the section is longer than {MAX_INPUT_CHARS} characters")
        try:
            rows = await self.engine.store.doc_rows(wanted, int(caller.level))
        except StoreError:
            raise ToolInputError(ABSTAIN_MESSAGES["index_unavailable"]) from None
        if not rows:
            raise ToolInputError(not_found(wanted))
        sections = list(dict.fromkeys(row["section"] for row in rows))
        picked = _in_section(rows, section) if section else rows
        if not picked:
            raise ToolInputError(f"{wanted} has no section {section!r}; its sections: "
                                 + "; ".join(repr(s) for s in sections))
        first = picked[0]
        cited = self.engine.citation(Candidate(first, np.asarray(first.pop("vector", [])), 0.0, 0.0))
        page = await asyncio.to_thread(passage, cited, joined([row["text"] for row in picked]), *sections,
                                       intents=self.engine.intents)
        del page["score"]
        return {**page, "sections": sections}


def passage(c: Citation, text: str, *headings: str, intents: Intents | None = None) -> dict[str, Any]:
    """A chunk (or a page) as an agent receives it: marked untrusted, its text fenced, and flagged
    when its text, title, section or `headings` read like instructions, in words or (`intents`) in
    meaning (agents/untrusted.py)."""
    return {"doc_path": c.doc_path, "title": c.title, "section": c.section, "untrusted": True,
            "suspected_injection": suspected(text, c.title, c.section, *headings, intents=intents),
            "text": fenced(text),
            "page_url": c.page_url, "commit_url": c.url, "version": c.version, "commit": c.commit,
            "commit_date": c.commit_date, "warning": c.warning, "score": c.score}


def _checked(value: str, what: str) -> str:
    text = value.strip()
    if not text:
        raise ToolInputError(f"the {what} is empty")
    if len(text) > MAX_INPUT_CHARS:
        raise ToolInputError(f"the {what} is longer than {MAX_INPUT_CHARS} characters")
    return text


def _in_section(rows: list[dict[str, Any]], section: str) -> list[dict[str, Any]]:
    """The rows of the section named exactly (case aside), else of those whose name contains it."""
    key = section.lower()
    return ([row for row in rows if row["section"].lower() == key]
            or [row for row in rows if key in row["section"].lower()])


def joined(texts: list[str]) -> str:
    """Chunk texts in order as one text: a chunk that opens with the end of the previous one (the
    chunker's overlap, rag/chunking.py, before a blank line) has that repeat dropped."""
    out: list[str] = []
    for text in texts:
        carry, blank, rest = text.partition("\n\n")
        out.append(rest if out and blank and carry and out[-1].endswith(carry) else text)
    return "\n\n".join(out)
