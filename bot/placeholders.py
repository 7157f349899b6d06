"""The "Looking through the docs…" messages: each question's `Placeholder`, and those posted and
not yet replaced by an answer (`Placeholders`).

`Answerer` opens one right after posting a placeholder and closes it when the placeholder is
replaced (by the answer or a failure note). What is still open when a shutdown's drain time is
up is edited to the restart note by `bot.serve`, so no placeholder outlives the process.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from docsbot.observability import metrics
from bot.telemetry import answer_id, since_request


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
    surface: str  # mention | dm | command | assistant (metrics, and the restart note's count)
    ts: str | None = None
    shown: str = ""  # the text it shows now
    tried: bool = False  # its first post was tried (or left to bot.progress)
    ended: bool = False  # no more progress is shown in it: the answer (or a note) is on its way
    answer_id: str = field(default_factory=answer_id)
    asked_at: float | None = field(default_factory=_asked_at)


@dataclass(frozen=True)
class OpenPlaceholder:
    channel: str
    ts: str
    surface: str
    answer_id: str
    opened_at: float


class Placeholders:
    def __init__(self) -> None:
        self._open: dict[tuple[str, str], OpenPlaceholder] = {}

    def open(self, placeholder: Placeholder) -> None:
        """A placeholder was posted: the question's first visible reply."""
        assert placeholder.ts is not None
        self._open[(placeholder.channel, placeholder.ts)] = OpenPlaceholder(
            placeholder.channel, placeholder.ts, placeholder.surface, placeholder.answer_id, time.monotonic())
        if placeholder.asked_at is not None:
            metrics.FIRST_REPLY_SECONDS.labels(placeholder.surface).observe(time.perf_counter() - placeholder.asked_at)

    def close(self, channel: str, ts: str) -> None:
        self._open.pop((channel, ts), None)

    def still_open(self) -> list[OpenPlaceholder]:
        return list(self._open.values())
