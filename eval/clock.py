"""A clock a test moves by hand (`clock.now += 10`), for code that takes a `clock` callable."""
from __future__ import annotations


class Clock:
    def __init__(self, now: float = 1_800_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
