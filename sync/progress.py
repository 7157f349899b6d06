"""Where a running index or sync says how far it got, for `docsbot status` and `/docs status` in
other processes: a small JSON file in the work dir, replaced atomically, removed at the end.

A file left by a killed run names a process that no longer exists and is ignored.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from docsbot.settings import Settings
from rag.progress import recording_to
from sync.errors import SyncError
from sync.workcopy import work_dir

FILE = "progress.json"


def progress_file(settings: Settings) -> Path | None:
    """The progress file, or None when there is no local work dir to hold it."""
    try:
        return work_dir(settings) / FILE
    except SyncError:
        return None


def write_progress(path: Path, done: int, total: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps({"pid": os.getpid(), "done": done, "total": total}))
    partial.replace(path)


def read_progress(settings: Settings) -> dict[str, Any] | None:
    """{"done", "total"} of the run in progress, or None when none is running."""
    path = progress_file(settings)
    try:
        state = json.loads(path.read_text()) if path else None
    except (OSError, ValueError):
        return None
    if not isinstance(state, dict) or not _alive(state.get("pid")):
        return None
    return {"done": int(state.get("done", 0)), "total": int(state.get("total", 0))}


@contextmanager
def recording(settings: Settings) -> Iterator[None]:
    """Record the progress of the embedding done inside this block; remove the record after it."""
    path = progress_file(settings)
    if path is None:
        yield
        return
    try:
        with recording_to(lambda done, total: write_progress(path, done, total)):
            yield
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: object) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True
