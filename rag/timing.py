"""Where the time of a long operation goes, stage by stage (indexing, embedding)."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class StageSeconds:
    """Seconds spent per stage, summed over the threads that run it (so with several threads a
    stage can add up to more than the wall time)."""

    seconds: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @contextmanager
    def stage(self, name: str, inner: tuple[str, ...] = ()) -> Iterator[None]:
        """Time the block as `name`, less the seconds the `inner` stages run inside it add."""
        started = time.perf_counter()
        before = sum(self.seconds.get(stage, 0.0) for stage in inner)
        try:
            yield
        finally:
            with self._lock:
                nested = sum(self.seconds.get(stage, 0.0) for stage in inner) - before
                self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started - nested
