"""Showing the work of a slow answer: Slack's plan block (`plan` holding `task_card`s, Block Kit;
slack_sdk 3.48's `PlanBlock` / `TaskCardBlock` build the same JSON) in the answer's placeholder.

The engine tells each step as it starts and ends (rag/answer_steps.py). Nothing is shown for an
answer that is done within PLAN_AFTER_S of starting, as every answer of the embedded answerer
over the dev suite is (measured on a shared 2-core machine: docs-sync's 77 golden questions 0.10 s
at most, tests/test_plan.py; mtrag-govt-dev's 79 1.6 s at most, p90 0.43 s; awsdocs-dev's 48
0.03 s at most). From then on the placeholder shows the steps so far, and each change, through
bot.progress (best-effort, coalesced, within its edit allowance). An answer whose plan was shown
keeps it, each step finished or failed, above its text, when the message has room for it (a long
answer keeps all of its text and sources instead). Page titles in "reading <page>" are
those the answer is written from: at the conversation's level.
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from bot.blocks import MESSAGE_CHARS, WORKING
from rag import Step

PLAN_AFTER_S = 2.0
TITLE_WORKING, TITLE_DONE = "Working on it", "How I answered"
_STATUSES = {"pending", "in_progress", "complete", "error"}
_TITLE_CHARS = 150

Show = Callable[[dict[str, Any], str], None]  # (the placeholder's message, a key of what it shows)


class Plan:
    def __init__(self, show: Show, after_s: float = PLAN_AFTER_S) -> None:
        self._show = show
        self._after_s = after_s
        self._steps: dict[str, Step] = {}
        self._timer: asyncio.TimerHandle | None = None
        self.shown = False

    def start(self) -> None:
        """The answer starts now: its steps show once it has taken `after_s`."""
        self._timer = asyncio.get_running_loop().call_later(self._after_s, self._due)

    def on_step(self, step: Step) -> None:
        """The engine's step sink."""
        self._steps[step.key] = step
        if self.shown:
            self._show_now()

    def restart(self) -> None:
        """The question is answered again (its audience dropped): its steps start over."""
        self._steps.clear()

    def stop(self) -> None:
        """The answer is done: nothing more is shown in the placeholder."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def finished(self) -> dict[str, Any] | None:
        """The plan block the answer keeps, every step finished or failed; None when it never showed."""
        if not self.shown or not self._steps:
            return None
        done = [Step(s.key, s.title, "complete" if s.status == "in_progress" else s.status)
                for s in self._steps.values()]
        return plan_block(TITLE_DONE, done)

    def _due(self) -> None:
        self._timer = None
        self.shown = True
        self._show_now()

    def _show_now(self) -> None:
        block = plan_block(TITLE_WORKING, list(self._steps.values()))
        self._show({"text": WORKING, "blocks": [block]}, json.dumps(block, sort_keys=True))


def plan_block(title: str, steps: list[Step]) -> dict[str, Any]:
    """Block Kit's `plan` with one `task_card` per step (task_id, title, status are required)."""
    tasks = [{"type": "task_card", "task_id": _task_id(i, step), "title": step.title[:_TITLE_CHARS],
              "status": step.status if step.status in _STATUSES else "pending"}
             for i, step in enumerate(steps)]
    return {"type": "plan", "title": title, "tasks": tasks}


def _task_id(n: int, step: Step) -> str:
    return f"{n}-{step.key.split(':', 1)[0]}"


def with_plan(message: dict[str, Any], block: dict[str, Any] | None, max_blocks: int = 50) -> dict[str, Any]:
    """The answer `message` with its finished plan above its text, when it has room (blocks and
    size: a long answer keeps its whole text and sources rather than its plan)."""
    if block is None or len(message["blocks"]) >= max_blocks:
        return message
    planned = {**message, "blocks": [block, *message["blocks"]]}
    return planned if len(json.dumps(planned["blocks"])) + len(planned["text"]) <= MESSAGE_CHARS else message
