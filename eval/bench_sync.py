"""`python -m eval bench-sync`: what a sync costs against a full rebuild, and whether it is right.

1. Real history: the openshift/runbooks bundle (../shared/corpora), `alerts/` indexed at one
   commit, then N consecutive first-parent commits (default 50, with adds, edits, renames and
   deletes) each pushed upstream and synced incrementally. After every commit the index is
   compared with a full `docsbot index` rebuild of a clone at the same commit (chunk ids, texts,
   metadata, vectors), and every text the sync's embedder is handed is recorded, to count any
   text embedded twice. Times: incremental sync vs that full rebuild (whose vector cache is
   warm: it embeds only new text, so the ratio understates what a cold rebuild costs).
2. Scale: a synthetic git repository of 10,000 small Markdown files. The first sync embeds all
   of them (the cold full rebuild, measured); then one-file commits (edit, add, rename, delete)
   are synced, and a full rebuild with a warm vector cache is timed too.

The box is shared and noisy: read the ratios, measured in the same run, not the seconds.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import SecretStr

from foundation.settings import Settings
from foundation.wiring import lease_config, rag_config, sync_config
from eval.wrapped_embedder import WrappedEmbedder
from eval.repos import commit_files, index_differences, rebuild_at, run_git
from rag import Embedder, Engine, ExtractiveAnswerer, make_embedder, open_index
from sync.folder import index_folder
from sync.service import run_sync

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpora" / "openshift-runbooks"


@dataclass(eq=False)
class RecordingEmbedder(WrappedEmbedder):
    """Wraps an embedder and remembers every text it was asked to embed, to count repeats."""

    seen: set[str] = field(default_factory=set)
    texts: int = 0
    repeats: int = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        self._record(texts)
        return self.inner.embed(texts)

    def embed_batches(self, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        self._record(texts)
        return self.inner.embed_batches(texts)

    def _record(self, texts: list[str]) -> None:
        for text in texts:
            digest = hashlib.sha256(text.encode()).hexdigest()
            self.repeats += digest in self.seen
            self.seen.add(digest)
        self.texts += len(texts)


def bench_settings(data: Path, repo: Path, **overrides: object) -> Settings:
    values: dict[str, Any] = {"data_dir": str(data), "repo": SecretStr(str(repo)), "default_level": "team",
                                 "repo_web": "https://github.com/openshift/runbooks", "sync_fetch_retries": 0}
    values.update(overrides)
    return Settings(_env_file=None, **values)


def replay(tmp: Path, start: int, count: int, model: Embedder) -> bool:
    lines = (CORPUS / "commits_first_parent.jsonl").read_text().splitlines()
    history = [json.loads(line) for line in lines]
    stretch = history[start:start + count + 1]
    source = tmp / "upstream"
    subprocess.run(["git", "clone", "-q", str(CORPUS / "openshift-runbooks.bundle"), str(source)], check=True)
    settings = bench_settings(tmp / "index", source, repo_subdir="alerts")
    synced, reference = RecordingEmbedder(model), RecordingEmbedder(model)

    run_git(source, "checkout", "-q", "-B", "master", stretch[0]["commit"])
    started = time.perf_counter()
    first = run_sync(sync_config(settings), synced)
    cold = time.perf_counter() - started
    print(f"openshift: alerts/ at first-parent commit {start} ({stretch[0]['commit'][:7]}): first sync (cold full "
          f"rebuild) {first.added} documents, {first.chunks_embedded} chunks embedded in {cold:.1f}s")
    shutil.copytree(settings.data_dir, tmp / "ref" / "index")  # the reference starts from the same vectors
    kinds = {"A": 0, "M": 0, "D": 0, "R": 0}
    sync_s, rebuild_s, mismatches, embedded = [], [], 0, 0
    for step, entry in enumerate(stretch[1:], 1):
        for change in entry["md_changes"]:
            if change["path"].startswith("alerts/"):
                kinds[change["status"][0]] += 1
        run_git(source, "checkout", "-q", "-B", "master", entry["commit"])
        started = time.perf_counter()
        report = run_sync(sync_config(settings), synced)
        sync_s.append(time.perf_counter() - started)
        embedded += report.chunks_embedded
        started = time.perf_counter()
        rebuilt = rebuild_at(settings, source, entry["commit"], tmp / "ref", reference)
        rebuild_s.append(time.perf_counter() - started)
        differences = index_differences(settings.data_dir, rebuilt)
        mismatches += bool(differences)
        print(f"  {step:2d} {entry['commit'][:7]} {report.mode:<11} +{report.added} ~{report.modified} "
              f"-{report.deleted} >{report.renamed} embedded {report.chunks_embedded:3d} "
              f"reused {report.chunks_reused:4d} "
              f"sync {sync_s[-1]:.2f}s rebuild {rebuild_s[-1]:.2f}s {'SAME' if not differences else differences[:3]}")
    ratio = statistics.median(r / s for r, s in zip(rebuild_s, sync_s))
    print(f"openshift replay: {count} commits, markdown changes under alerts/ A={kinds['A']} M={kinds['M']} "
          f"D={kinds['D']} R={kinds['R']}")
    print(f"  incremental == full rebuild after {count - mismatches}/{count} commits")
    print(f"  sync embedder: {synced.texts} texts embedded ({embedded} in the replay), {synced.repeats} embedded twice")
    print(f"  median sync {statistics.median(sync_s):.2f}s; full rebuild with a warm vector cache: median "
          f"{statistics.median(rebuild_s):.2f}s, median ratio rebuild/sync {ratio:.1f}x; the cold first build took "
          f"{cold / statistics.median(sync_s):.0f}x a median sync")
    return mismatches == 0 and synced.repeats == 0


WORDS = ("queue backup restart latency quota certificate rotation replica failover node disk memory cpu alert "
         "ingress token schedule retention snapshot upgrade rollback drain cordon secret volume policy").split()


def synthetic_doc(i: int, rng: random.Random) -> str:
    words = " ".join(rng.choice(WORDS) for _ in range(18))
    return f"# Service {i} runbook\n\nService {i} handles {words}. Page the owner of area {i % 97} when it fails.\n"


def scale(tmp: Path, files: int, model: Embedder) -> bool:
    rng = random.Random(7)
    source = tmp / "synthetic"
    source.mkdir(parents=True)
    run_git(source, "init", "-q")
    commit_files(source, {f"area{i % 100:02d}/doc{i:05d}.md": synthetic_doc(i, rng) for i in range(files)}, "bulk")
    settings = bench_settings(tmp / "index10k", source)
    recorder = RecordingEmbedder(model)
    started = time.perf_counter()
    first = run_sync(sync_config(settings), recorder)
    cold = time.perf_counter() - started
    print(f"synthetic: {files} files; first sync (cold full rebuild, every chunk embedded): {cold:.1f}s, "
          f"{first.chunks_embedded} chunks embedded")
    steps: dict[str, dict[str, str | bytes | None]] = {
        "edit": {"area03/doc00003.md": synthetic_doc(3, rng) + "\nAlso check the dashboard.\n"},
        "add": {"area42/new-runbook.md": synthetic_doc(files + 1, rng)},
        "rename": {"area05/doc00005.md": None, "area05/renamed.md": (source / "area05/doc00005.md").read_text()},
        "delete": {"area07/doc00007.md": None},
        "nothing": {},
    }
    times = {}
    for name, change in steps.items():
        commit_files(source, change, name)
        before = recorder.texts
        started = time.perf_counter()
        report = run_sync(sync_config(settings), recorder)
        times[name] = time.perf_counter() - started
        print(f"  one-file {name:<7}: {report.mode:<11} embedded {recorder.texts - before} "
              f"(+{report.added} ~{report.modified} -{report.deleted} >{report.renamed}) in {times[name]:.3f}s")
    config = rag_config(settings)
    engine = Engine(config, open_index(config.index), recorder, ExtractiveAnswerer())
    root = Path(settings.data_dir) / "sync" / "repo"
    before = recorder.texts
    started = time.perf_counter()
    index_folder(engine, lease_config(settings), root)
    warm = time.perf_counter() - started
    print(f"  full rebuild with a warm vector cache: {warm:.2f}s ({recorder.texts - before} embedded)")
    one_file = statistics.median(times[k] for k in ("edit", "add", "rename", "delete"))
    print(f"  median one-file sync {one_file:.3f}s: {cold / one_file:.0f}x faster than the cold rebuild, "
          f"{warm / one_file:.1f}x faster than the warm rebuild; texts embedded twice: {recorder.repeats}")
    ok = cold / one_file >= 50 and one_file < 2.0 and recorder.repeats == 0
    print(f"  bars (>= 50x faster than a full rebuild, < 2 s): {'PASS' if ok else 'FAIL'}")
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-sync", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--start", type=int, default=86, help="first-parent commit index to index first")
    parser.add_argument("--commits", type=int, default=50, help="commits to replay after it")
    parser.add_argument("--files", type=int, default=10_000, help="files in the synthetic repository (0: skip)")
    args = parser.parse_args(argv[1:])
    if args.commits and not CORPUS.is_dir():
        print(f"eval bench-sync: the openshift-runbooks history is not at {CORPUS} (the shared corpora)",
              file=sys.stderr)
        return 2
    model = make_embedder(rag_config(Settings(_env_file=None)))
    with tempfile.TemporaryDirectory(prefix="bench-sync-") as tmp:
        ok = True
        if args.commits:
            ok &= replay(Path(tmp) / "replay", args.start, args.commits, model)
        if args.files:
            ok &= scale(Path(tmp) / "scale", args.files, model)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(["bench-sync", *sys.argv[1:]]))
