"""Waiting for something another task, thread or process does."""
from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable


async def until(condition: Callable[[], object], timeout_s: float = 60.0, message: str = "timed out") -> None:
    """Until `condition()` (or what it returns, when that is awaitable) is true; fails with `message`."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = condition()
        if inspect.isawaitable(result):
            result = await result
        if result:
            return
        assert time.monotonic() < deadline, message
        await asyncio.sleep(0.1)
