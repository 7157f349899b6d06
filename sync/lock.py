"""One sync at a time, across processes: an exclusive `flock` on a file in the work dir.

A second sync is refused at once rather than queued: the running one will pick up the same
remote head, and in-process triggers coalesce before they get here (see `sync.scheduler`). The
kernel drops the lock when its holder dies, so a killed sync never blocks the next one.
"""
from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sync.errors import SyncBusy


@contextmanager
def sync_lock(directory: Path) -> Iterator[None]:
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "sync.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "?"
            raise SyncBusy(f"another sync is running (pid {holder}); not starting a second one") from None
        try:
            handle.truncate(0)
            handle.write(str(os.getpid()))
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
