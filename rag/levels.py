"""Access levels, ordered: a reader at a level may see documents at that level or below."""
from __future__ import annotations

from enum import IntEnum


class Level(IntEnum):
    public = 0
    team = 1
    restricted = 2

    @classmethod
    def parse(cls, value: str) -> "Level":
        """Parse a level name; raises ValueError naming the allowed values."""
        try:
            return cls[str(value).strip().lower()]
        except KeyError:
            allowed = ", ".join(level.name for level in cls)
            raise ValueError(f"unknown access level {value!r} (expected one of: {allowed})") from None

    def __str__(self) -> str:
        return self.name
