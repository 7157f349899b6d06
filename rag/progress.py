"""Progress of a long embedding run (a first index or sync of a big docs repository).

Shown where the run's output goes: a tqdm bar with rate and ETA on a terminal, otherwise one log
line every ~10 s. Separately, the count of vectors already saved is handed to the recorder set
with `recording_to` (the sync and `docsbot index` write it where `docsbot status` can read it).
"""
from __future__ import annotations

import logging
import math
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TextIO

log = logging.getLogger("docsbot.progress")

Recorder = Callable[[int, int], None]  # (chunks done, chunks in all)
_recorder: ContextVar[Recorder | None] = ContextVar("progress_recorder", default=None)
_hidden: ContextVar[bool] = ContextVar("progress_hidden", default=False)

LOG_EVERY_S = 10.0


@contextmanager
def recording_to(recorder: Recorder) -> Iterator[None]:
    """Every Progress started inside this block reports its saved count to `recorder`."""
    token = _recorder.set(recorder)
    try:
        yield
    finally:
        _recorder.reset(token)


@contextmanager
def hidden() -> Iterator[None]:
    """No bar and no progress lines from the Progress started inside (a command printing JSON)."""
    token = _hidden.set(True)
    try:
        yield
    finally:
        _hidden.reset(token)


def describe(done: int, total: int, rate: float, files: tuple[int, int] | None = None) -> str:
    """`embedded 12,000 / 33,046 chunks (1,200 / 2,900 files), 21/s, ETA 15 min`."""
    line = f"embedded {done:,} / {total:,} chunks"
    if files is not None:
        line += f" ({files[0]:,} / {files[1]:,} files)"
    if rate > 0:
        left = (total - done) / rate
        eta = f"{left / 60:.0f} min" if left >= 90 else f"{left:.0f} s"
        line += f", {rate:.0f}/s, ETA {eta}"
    return line


class Progress:
    """Counts chunks embedded out of `total`: `advance` as batches finish (display), `saved` as
    they reach the vector cache (recorded for other processes)."""

    def __init__(self, total: int, stream: TextIO | None = None, log_every_s: float = LOG_EVERY_S) -> None:
        self.total, self.done = total, 0
        self.files: tuple[int, int] | None = None  # (documents written, documents in all), when known
        self._record = _recorder.get()
        self._started = self._logged = time.monotonic()
        self._log_every = math.inf if _hidden.get() else log_every_s
        stream = stream or sys.stderr
        self._bar = None
        if stream.isatty() and not _hidden.get():
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="chunk", desc="embedding", file=stream, dynamic_ncols=True)
        if self._record:
            self._record(0, total)

    def advance(self, n: int) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
            return
        now = time.monotonic()
        if now - self._logged >= self._log_every:
            self._logged = now
            log.info("%s", describe(self.done, self.total, self.done / max(now - self._started, 1e-9), self.files))

    def file(self, done: int, total: int) -> None:
        """`done` of the `total` documents are chunked (shown beside the chunks)."""
        self.files = (done, total)
        if self._bar is not None:
            self._bar.set_postfix_str(f"{done:,}/{total:,} files", refresh=False)

    def saved(self, done: int) -> None:
        if self._record:
            self._record(done, self.total)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self.done and time.monotonic() - self._started >= self._log_every:
            elapsed = time.monotonic() - self._started
            log.info("%s in %.0f s", describe(self.done, self.total, 0, self.files), elapsed)
