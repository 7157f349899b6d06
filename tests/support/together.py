"""Real processes started at the same moment: two replicas hitting the state database at once."""
from __future__ import annotations

import asyncio
import os
import sys
import time

from tests.support.settings import REPO

START_AFTER_S = 4.0  # time for every process to import and connect before the common start


async def run_together(script: str, args: list[str], variants: list[str]) -> list[tuple[int, str]]:
    """Run `python -c script *args VARIANT START` once per variant; START is a shared epoch time
    the script waits for. Returns (exit status, output) per process."""
    start = time.time() + START_AFTER_S
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, *args, variant, str(start),
            env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        )
        for variant in variants
    ]
    outs = [await proc.communicate() for proc in procs]
    return [(proc.returncode or 0, out.decode()) for proc, (out, _) in zip(procs, outs)]
