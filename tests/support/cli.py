"""The `docsbot` command in a subprocess, as a person runs it (no DOCSBOT_*, OPENAI_*, SLACK_* of ours)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def docsbot(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    return subprocess.run(
        [sys.executable, "-m", "commands.cli", *args], capture_output=True, text=True, timeout=120,
        env={**clean, **(env or {})}, cwd=cwd,
    )
