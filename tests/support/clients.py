"""Closing the OpenAI clients a test let go, on the test's own event loop."""
from __future__ import annotations

import asyncio
import gc


async def close_dropped_clients() -> None:
    """An AsyncOpenAI client that is collected while a loop runs schedules its own close on that
    loop. Collected during a later test, it closes its connections on that test's loop, not the
    ended one they belong to: "Event loop is closed" lands in the later test's log (a CI failure
    of test_hardening_input). Collected here, the close runs where the connections live."""
    gc.collect()
    mine = asyncio.current_task()
    # A task may run something other than a coroutine function's coroutine (an async generator's
    # athrow, which has no __qualname__): only the clients' aclose() is awaited here.
    closing = [task for task in asyncio.all_tasks()
               if task is not mine and getattr(task.get_coro(), "__qualname__", "").endswith(".aclose")]
    await asyncio.gather(*closing, return_exceptions=True)
