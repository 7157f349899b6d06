"""Where a running index or sync says how far it got, for `docsbot status` and `/docs status` on
any host: a row in the state store, written when the run starts, then at most every ~2 s by the
lease holder, and deleted at the end. A row left by a writer that was killed (or cut off from its
disk or the state store) says, once its lease has expired, that this run stopped before it
finished (state.sync_status.SyncProgress.read).
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rag import recording_to
from state.db import StateUnavailable
from state.sync_status import SyncProgress
from sync.lease import WriterLease

log = logging.getLogger("docsbot.sync")

EVERY_S = 2.0


@contextmanager
def recording(lease: WriterLease) -> Iterator[None]:
    """Record the progress of the embedding done inside this block; delete the record after it."""
    progress = SyncProgress(lease.db)
    last, failed = float("-inf"), False

    def record(done: int, total: int) -> None:
        nonlocal last, failed
        now = time.monotonic()
        if now - last < EVERY_S and done < total:
            return
        last = now
        try:
            lease.call(lambda: progress.report(lease.holder, done, total))
        except StateUnavailable as exc:  # only `docsbot status` misses it: once per run in the log
            if not failed:
                log.warning("could not record the sync's progress: %s", exc)
                failed = True

    record(0, 0)  # the run has started: a row its end never deletes says it stopped half-way
    last = float("-inf")  # and the first chunks embedded are shown at once
    try:
        with recording_to(record):
            yield
    finally:
        try:
            lease.call(lambda: progress.clear(lease.holder))
        except StateUnavailable as exc:
            log.warning("could not clear the sync's progress (shown until the next sync): %s", exc)
