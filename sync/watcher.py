"""Watching a local docs folder (or a local repository) and syncing after each burst of changes.

`watchfiles.awatch` groups the events of a burst (an editor's save, a checkout) and yields once
the folder has been quiet for the debounce time; the sync then reconciles by content hash, so
only files whose text changed are re-chunked, and a missed event is caught by the next one.
"""
from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from watchfiles import awatch

log = logging.getLogger("docsbot.sync")


async def watch_folder(
    folder: Path, on_change: Callable[[], Awaitable[None]], debounce_ms: int,
    stop: asyncio.Event | None = None,
) -> None:
    """Call on_change after each debounced burst of changes under folder, until stop is set.

    No filter: in a local repository a commit only changes files under .git, and that must count."""
    async for changes in awatch(folder, watch_filter=None, debounce=debounce_ms, stop_event=stop):
        log.info("%d file changes under %s", len(changes), folder)
        await on_change()
