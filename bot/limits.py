"""Back-pressure that answers at once: a cap on answers in progress (the per-user rate limit,
shared by all replicas, is `state.ratelimit`).

It never queues: a refused question gets a friendly message right away."""
from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class AnswerSlots:
    """A non-blocking cap on concurrent answers (retrieval + generation)."""

    def __init__(self, limit: int) -> None:
        self._semaphore = asyncio.Semaphore(limit)

    @asynccontextmanager
    async def take(self) -> AsyncIterator[bool]:
        """Yields False, without waiting, when every slot is busy."""
        if self._semaphore.locked():
            yield False
            return
        async with self._semaphore:
            yield True
