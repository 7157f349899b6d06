"""What every fuzz target shares: its outcome, and running a property over generated inputs."""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings as hsettings, strategies as st


@dataclass
class Outcome:
    target: str
    tried: int = 0
    failures: int = 0
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)  # what kinds of input were tried
    first_failure: str = ""

    def line(self) -> str:
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(self.counts.items()))
        return (f"{self.target:<15} {self.tried:>7,} inputs  {self.failures} failures  {self.seconds:6.1f}s"
                + (f"  ({kinds})" if kinds else "")
                + (f"\n    first failure: {self.first_failure}" if self.failures else ""))


def run_property(
    outcome: Outcome, examples: int, strategy: st.SearchStrategy, check: Callable[[Any], None]
) -> Outcome:
    """Run `check` on `examples` generated inputs; a falsified property is one failure (hypothesis
    stops at the first and shrinks it to the smallest input that still fails)."""
    @hsettings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def property_holds(value: Any) -> None:
        outcome.tried += 1
        check(value)

    started = time.perf_counter()
    try:
        property_holds()
    except Exception as exc:  # noqa: BLE001 - the falsified property, reported with its input
        found = exc.exceptions if isinstance(exc, ExceptionGroup) else [exc]
        outcome.failures += len(found)
        outcome.first_failure = "\n    ".join(f"{type(e).__name__}: {e}"[:1500] for e in found)
    outcome.seconds = time.perf_counter() - started
    return outcome
