"""A first sync piped to a file says how far it is (issue 24: 134 s of silence): the `docsbot`
command's logging lets the progress lines through at its one-shot WARNING level."""
from __future__ import annotations

import os
import subprocess
import sys

PROBE = """
import time
from commands.cli import build_parser, configure_observability, load_settings
configure_observability(load_settings(), build_parser().parse_args(["sync"]))
from rag.progress import Progress
progress = Progress(300, log_every_s=0.05)
for _ in range(3):
    time.sleep(0.06)
    progress.advance(100)
progress.close()
"""


def test_progress_lines_reach_a_file() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSBOT_")}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120,
                          check=True)  # stderr is a pipe, not a terminal: log lines, no bar
    assert "embedded 100 / 300 chunks" in done.stderr and "embedded 300 / 300 chunks" in done.stderr, done.stderr
