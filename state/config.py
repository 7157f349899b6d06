"""What `state` is told: the database to use (built by the application from its settings)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class StateConfig:
    # SQLAlchemy URL (postgresql://… or sqlite:///…); it may hold a password.
    url: str = field(repr=False)
    # The index folder whose old LanceDB answer log is imported once (None: nothing to import).
    legacy_index: str | None = None


@dataclass(frozen=True)
class GapsConfig:
    """The docs-gaps report and the weekly digest to the docs owners (insights/gaps.py, bot/digest.py)."""

    digest_cron: str = "0 9 * * MON"  # 5 cron fields, UTC; "": no digest
    name_askers: bool = False  # show who asked (off: the questions only)
    review_days: int = 365  # a page is overdue this long after its last review (else last commit)
