"""Back-pressure that answers at once: a per-user rate limit and a cap on answers in progress.

Neither ever queues: a refused question gets a friendly message right away."""
from __future__ import annotations

import asyncio
import time
from collections import defaultdict, deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class UserRateLimit:
    """At most `per_minute` questions per user in any sliding 60-second window."""

    def __init__(self, per_minute: int, window_s: float = 60.0) -> None:
        self.per_minute = per_minute
        self.window_s = window_s
        self._asked: defaultdict[str, deque[float]] = defaultdict(deque)

    def try_take(self, user_id: str) -> float:
        """0 when the user may ask now (and counts it), else seconds until they may."""
        now = time.monotonic()
        asked = self._asked[user_id]
        while asked and asked[0] <= now - self.window_s:
            asked.popleft()
        if len(asked) >= self.per_minute:
            return asked[0] + self.window_s - now
        asked.append(now)
        return 0.0


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
