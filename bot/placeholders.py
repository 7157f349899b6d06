"""The "Looking through the docs…" messages posted and not yet replaced by an answer.

`Answerer` opens one right after posting a placeholder and closes it when the placeholder is
replaced (by the answer or a failure note). What is still open when a shutdown's drain time is
up is edited to the restart note by `bot.serve`, so no placeholder outlives the process.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from docsbot.observability import metrics
from bot.telemetry import answer_id, since_request


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

    def open(self, channel: str, ts: str, surface: str) -> None:
        """A placeholder was posted: the question's first visible reply."""
        self._open[(channel, ts)] = OpenPlaceholder(channel, ts, surface, answer_id(), time.monotonic())
        waited = since_request()
        if waited is not None:
            metrics.FIRST_REPLY_SECONDS.labels(surface).observe(waited)

    def close(self, channel: str, ts: str) -> None:
        self._open.pop((channel, ts), None)

    def still_open(self) -> list[OpenPlaceholder]:
        return list(self._open.values())
