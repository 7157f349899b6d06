"""Background tasks started after Slack has been acknowledged, kept so they can be awaited.

Holding a reference stops a running answer from being garbage-collected; `idle()` lets a
shutdown finish the answers in flight (and lets the console and tests wait for them)."""
from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager, suppress
from typing import Any

log = logging.getLogger(__name__)


class BackgroundWork:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> None:
        task = asyncio.get_running_loop().create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("background task %s failed", task.get_name(), exc_info=task.exception())

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def idle(self, timeout_s: float | None = None) -> None:
        """Wait until no task is running (tasks started meanwhile are waited for too)."""
        async with asyncio.timeout(timeout_s):
            while self._tasks:
                await asyncio.wait(set(self._tasks))

    async def cancel_all(self, timeout_s: float = 2.0) -> None:
        """Stop the tasks still running (a shutdown whose drain time is up) and let them unwind."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=timeout_s)


@asynccontextmanager
async def every(every_s: float, step: Callable[[], Awaitable[object]], name: str) -> AsyncIterator[None]:
    """Run `step` at once and then every `every_s`, in the background, while the body runs."""

    async def loop() -> None:
        while True:
            await step()
            await asyncio.sleep(every_s)

    task = asyncio.get_running_loop().create_task(loop(), name=name)
    try:
        yield
    finally:
        task.cancel()
        with suppress(asyncio.CancelledError):
            await task
