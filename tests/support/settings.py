"""Where the repository and its sample docs are, and isolated settings for a test."""
from __future__ import annotations

from pathlib import Path

from foundation.settings import Settings

REPO = Path(__file__).resolve().parents[2]
SAMPLE_DOCS = REPO / "docs-sync"
SHARED = REPO.parent / "shared"


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    return Settings(_env_file=None, data_dir=str(data_dir), **overrides)
