"""What `state` is told: the database to use (built by the application from its settings)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class StateConfig:
    # SQLAlchemy URL (postgresql://… or sqlite:///…); it may hold a password.
    url: str = field(repr=False)
    # The index folder whose old LanceDB answer log is imported once (None: nothing to import).
    legacy_index: str | None = None
