"""`python -m eval bench-memory`: peak memory of a first sync, small docs against big ones.

Runs `docsbot sync --json` as a fresh child process into an empty data dir, once on the first
--small-pages pages of the docs folder (sorted by path; ~500 chunks by default) and once on all of
it (awsdocs-dev: 807 pages, ~10k chunks), and prints each run's documents, chunks and peak RSS
(the child's own ru_maxrss, from wait4), then the difference. The goal: the big run no more than
150 MB above the small one, so memory does not grow with the repository. `--repo PATH` adds a
first sync of a git repository (e.g. a clone of the sourcegraph handbook bundle: < 900 MB).
With `--json` prints the figures as one JSON object.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "shared" / "eval" / "awsdocs-dev" / "docs"  # ../shared
GOAL_GROWTH_MB = 150
GOAL_REPO_MB = 900


def first_sync(env: dict[str, str], data: Path) -> dict[str, float]:
    """Documents, chunks, peak RSS (MB) and seconds of one `docsbot sync` into the empty `data`."""
    env = {**env, "DOCSBOT_DATA_DIR": str(data)}
    started = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "commands.cli", "sync", "--json"], env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert child.stdout is not None
    out = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        raise RuntimeError(f"docsbot sync failed ({child.returncode})")
    report = json.loads(out.strip().splitlines()[-1])
    return {"documents": report["added"] + report["modified"] + report["unchanged"],
            "chunks": report["chunks_embedded"] + report["chunks_reused"],
            "peak_rss_mb": round(usage.ru_maxrss / 1024), "seconds": round(time.perf_counter() - started, 1)}


def measure(docs: Path, small_pages: int, repo: Path | None, folder: Path) -> dict[str, dict[str, float]]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_"))}
    pages = sorted(p for p in docs.rglob("*") if p.is_file())
    small = folder / "small"
    for page in pages[:small_pages]:
        target = small / page.relative_to(docs)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(page, target)
    runs = {"small": {**base, "DOCSBOT_DOCS_DIR": str(small)}, "big": {**base, "DOCSBOT_DOCS_DIR": str(docs)}}
    if repo is not None:
        runs["repo"] = {**base, "DOCSBOT_REPO": str(repo)}
    return {name: first_sync(env, folder / f"data-{name}") for name, env in runs.items()}


def report(figures: dict[str, dict[str, float]]) -> str:
    lines = [f"{'run':<6} {'documents':>9} {'chunks':>7} {'peak RSS':>9} {'seconds':>8}"]
    for name, row in figures.items():
        lines.append(f"{name:<6} {row['documents']:>9,} {row['chunks']:>7,} {row['peak_rss_mb']:>6,} MB "
                     f"{row['seconds']:>8}")
    growth = figures["big"]["peak_rss_mb"] - figures["small"]["peak_rss_mb"]
    lines.append(f"big - small: {growth:+,} MB (goal <= {GOAL_GROWTH_MB} MB: "
                 f"{'met' if growth <= GOAL_GROWTH_MB else 'MISSED'})")
    if "repo" in figures:
        peak = figures["repo"]["peak_rss_mb"]
        lines.append(f"repo: {peak:,} MB (goal < {GOAL_REPO_MB} MB: {'met' if peak < GOAL_REPO_MB else 'MISSED'})")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-memory", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=Path, default=DOCS, help="the big docs folder (default: awsdocs-dev)")
    parser.add_argument("--small-pages", type=int, default=40, help="pages of it in the small run (~500 chunks)")
    parser.add_argument("--repo", type=Path, help="also a first sync of this git repository")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv[1:])
    if not args.docs.is_dir():
        print(f"bench-memory: {args.docs} is not a folder (it needs ../shared beside the repository)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-memory-") as tmp:
        figures = measure(args.docs, args.small_pages, args.repo, Path(tmp))
    print(json.dumps(figures) if args.json else report(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main(["bench-memory", *sys.argv[1:]]))
