"""What the engine is doing while it answers, for a surface that shows the work of a slow answer
(bot/plan.py): "searching the docs", "reading <page>", "checking citations", each in progress,
then finished or failed. A sink is a plain function called on the event loop: it must not block
(it records, and a surface shows what it recorded when it chooses)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

StepStatus = Literal["in_progress", "complete", "error"]
SEARCH, CHECK = "search", "check"


@dataclass(frozen=True)
class Step:
    key: str  # "search", "check", or "read:<doc path>"
    title: str  # "Searching the docs", "Reading VPN Setup", "Checking citations"
    status: StepStatus


StepSink = Callable[[Step], None]


def searching(status: StepStatus) -> Step:
    return Step(SEARCH, "Searching the docs", status)


def reading(doc_path: str, title: str, status: StepStatus) -> Step:
    return Step(f"read:{doc_path}", f"Reading {title or doc_path}", status)


def checking(status: StepStatus) -> Step:
    return Step(CHECK, "Checking citations", status)
