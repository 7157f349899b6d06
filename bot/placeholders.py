"""The "Looking through the docs…" messages: each question's `Placeholder`, and those posted and
not yet replaced by an answer (`Placeholders`).

`Answerer` opens one right after posting a placeholder and closes it when the placeholder is
replaced (by the answer or a failure note). What is still open when a shutdown's drain time is
up is edited to the restart note by `bot.serve`, so no placeholder outlives the process. Each is
also recorded in the state database (`state.placeholders`) until it ends, so one left by a
process that died without a drain is ended by `bot.recovery` instead.
"""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field

from foundation.observability import metrics
from bot.telemetry import answer_id, since_request
from state.placeholders import Orphan, PlaceholderJournal

log = logging.getLogger(__name__)


def _asked_at() -> float | None:
    """perf_counter time of the Slack request that asked the current question, if known."""
    waited = since_request()
    return None if waited is None else time.perf_counter() - waited


@dataclass(eq=False)  # one per question, compared (and hashed) by identity
class Placeholder:
    """The message an answer will become: posted when first shown, ended exactly once.

    In the assistant panel nothing is shown while the status line says what happens, so the
    placeholder may never be posted (`ts` None): ending it then posts the final message. When
    Slack rate-limits its first post, it is posted later if there is time (bot.progress)."""

    channel: str
    thread_ts: str | None
    surface: str  # a name in bot/surfaces.NAMES (metrics, and the restart note's count)
    ts: str | None = None
    shown: str = ""  # the text it shows now
    tried: bool = False  # its first post was tried (or left to bot.progress)
    ended: bool = False  # no more progress is shown in it: the answer (or a note) is on its way
    answer_id: str = field(default_factory=answer_id)
    asked_at: float | None = field(default_factory=_asked_at)
    asker: str = ""  # who asked, and what: a replica that ends it after a crash offers to ask again
    question: str = field(default="", repr=False)  # never in a log line


@dataclass(frozen=True)
class OpenPlaceholder:
    channel: str
    ts: str
    surface: str
    answer_id: str
    opened_at: float


class Placeholders:
    def __init__(self, journal: PlaceholderJournal | None = None) -> None:
        self._open: dict[tuple[str, str], OpenPlaceholder] = {}
        self.journal = journal
        # Journal writes not yet made, and the task making them (one at a time, in batches).
        self._opened: list[Orphan] = []
        self._closed: list[str] = []
        self._writing: asyncio.Task[None] | None = None

    def open(self, placeholder: Placeholder) -> None:
        """A placeholder was posted: the question's first visible reply."""
        assert placeholder.ts is not None
        self._open[(placeholder.channel, placeholder.ts)] = OpenPlaceholder(
            placeholder.channel, placeholder.ts, placeholder.surface, placeholder.answer_id, time.monotonic())
        if placeholder.asked_at is not None:
            metrics.FIRST_REPLY_SECONDS.labels(placeholder.surface).observe(time.perf_counter() - placeholder.asked_at)
        if self.journal is not None:
            orphan = Orphan(placeholder.answer_id, placeholder.channel, placeholder.ts, placeholder.thread_ts,
                            placeholder.asker, placeholder.question, placeholder.surface)
            self._opened.append(orphan)
            self._write()

    def close(self, channel: str, ts: str) -> None:
        closed = self._open.pop((channel, ts), None)
        if closed is not None and self.journal is not None:
            self._closed.append(closed.answer_id)
            self._write()

    def still_open(self) -> list[OpenPlaceholder]:
        return list(self._open.values())

    def _write(self) -> None:
        """The answer never waits on the shared record (a silent database holds a write for
        seconds), nor do the acks that share its connection: one background task writes what
        piled up meanwhile in one transaction, then the next batch, so a close never overtakes
        its open and 50 questions at once are a few transactions, not a hundred."""
        if self._writing is None or self._writing.done():
            self._writing = asyncio.get_running_loop().create_task(self._drain(), name="placeholder-journal")

    async def _drain(self) -> None:
        assert self.journal is not None
        while self._opened or self._closed:
            opened, closed = self._opened, self._closed
            self._opened, self._closed = [], []
            try:
                await self.journal.record(opened, closed)
            except Exception as exc:  # not recovered after a crash, or ended with a note after its answer
                log.warning("%d placeholder(s) not recorded: %s", len(opened) + len(closed), exc)

    async def flush(self) -> None:
        """Wait for the journal writes made so far (a shutdown's last closes)."""
        if self._writing is not None:
            await self._writing
