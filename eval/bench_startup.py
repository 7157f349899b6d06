"""`python -m eval bench-startup`: how long the `docsbot` command takes to start.

Runs `python -c pass` (the interpreter alone, the floor), `docsbot --help`, `docsbot status`,
`docsbot ask` (an extractive answer) and a `docsbot sync` with nothing to do (against an index of
one small document, built and synced first in a temporary data dir) as fresh processes,
interleaved over --rounds so all see the same machine load (after one round that is not timed),
and prints each one's median and best wall time. The page is dated a minute back, as docs written
before a sync are, and the commands run with their bytecode cached (in the temporary folder, so
that PYTHONDONTWRITEBYTECODE, set on some machines, does not time the compiling of every module).
The goals: `--help` under 0.5 s and `status` under 1.5 s; `ask` under 0.8 s and the no-op `sync`
under 1.0 s above the interpreter. With `--json` prints the figures as one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GOALS_S = {"docsbot --help": 0.5, "docsbot status": 1.5}
OVER_PYTHON_GOALS_S = {"docsbot ask": 0.8, "docsbot sync": 1.0}  # above `python -c pass`
DOC = "---\ntitle: Start-up\naccess: public\n---\n# Start-up\n\nThe bench indexes this page once.\n"
QUESTION = "what does the bench index once?"


def commands() -> dict[str, list[str]]:
    """Each command as the person types it (the console script is `python -m commands.cli`)."""
    docsbot = [sys.executable, "-m", "commands.cli"]
    return {"python -c pass": [sys.executable, "-c", "pass"], "docsbot --help": [*docsbot, "--help"],
            "docsbot status": [*docsbot, "status"], "docsbot ask": [*docsbot, "ask", QUESTION],
            "docsbot sync": [*docsbot, "sync"]}


def wall_s(argv: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if done.returncode not in (0, 1):  # 1: `ask` declined, still a whole run of the command
        raise RuntimeError(f"{' '.join(argv[2:])} failed ({done.returncode}): {done.stderr.strip()[-300:]}")
    return time.perf_counter() - started


def measure(rounds: int, folder: Path) -> dict[str, dict[str, float]]:
    """Median and best seconds of each command, over `rounds` interleaved runs."""
    docs, data = folder / "docs", folder / "data"
    docs.mkdir()
    page = docs / "start-up.md"
    page.write_text(DOC, encoding="utf-8")
    os.utime(page, (time.time() - 60, time.time() - 60))
    env = {**os.environ, "DOCSBOT_DATA_DIR": str(data), "DOCSBOT_DOCS_DIR": str(docs),
           "PYTHONPYCACHEPREFIX": str(folder / "bytecode")}
    for variable in ("DOCSBOT_DATABASE_URL", "DOCSBOT_REPO", "OPENAI_BASE_URL", "PYTHONDONTWRITEBYTECODE"):
        env.pop(variable, None)  # the state file beside the index, the docs folder, the extractive answerer
    for setup in ("index", "sync"):  # the first sync rewrites the rows under its own signature
        subprocess.run([sys.executable, "-m", "commands.cli", setup], env=env, check=True, stdout=subprocess.DEVNULL)
    times: dict[str, list[float]] = {name: [] for name in commands()}
    for timed in [False] + [True] * rounds:
        for name, argv in commands().items():
            seconds = wall_s(argv, env)
            if timed:
                times[name].append(seconds)
    return {name: {"median_s": round(statistics.median(t), 3), "best_s": round(min(t), 3)} for name, t in times.items()}


def report(figures: dict[str, dict[str, float]]) -> str:
    floor = figures["python -c pass"]["median_s"]
    lines = [f"{'command':<16} {'median':>8} {'best':>8} {'over python':>12}  goal"]
    for name, row in figures.items():
        goal, above = GOALS_S.get(name), OVER_PYTHON_GOALS_S.get(name)
        verdict = "" if goal is None else f"< {goal} s: {'met' if row['median_s'] < goal else 'MISSED'}"
        if above is not None:
            verdict = f"< python + {above} s: {'met' if row['median_s'] - floor < above else 'MISSED'}"
        lines.append(f"{name:<16} {row['median_s']:>7.3f}s {row['best_s']:>7.3f}s "
                     f"{row['median_s'] - floor:>+11.3f}s  {verdict}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-startup", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5, help="runs of each command (interleaved)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv[1:])
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        figures = measure(max(1, args.rounds), Path(tmp))
    print(json.dumps(figures) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(["bench-startup", *sys.argv[1:]]))
