"""`python -m eval bench-sources`: N sources against one repository holding the same files (issue 55).

N real git repositories are made in a temporary folder from the real trees in ../shared (the four
handbooks and the openshift runbooks, cloned from their bundles; the formats-dev trees; the
awsdocs-dev guides; the largest split in parts to reach 20), smallest first, so `--sources 4` is
a quick run. One more repository holds the same files, each source's under a folder of its name.
Both are synced with the embedded default model and measured side by side in the same run:

- first sync, embedding included: the one repository's first sync with a cold vector cache
  (every chunk embedded by the model); with `--cold` the sources' too, with a cold cache of
  their own (it doubles the bench's embedding time);
- first sync, embedding excluded: both again into empty indexes, the model's vectors remembered
  from the cold run (the sync still saves every vector to its own cache and writes every row);
- a one-file change in one source (the same edit in the one repository's folder), then a no-op
  sync of all (median of `--rounds`);
- question latency: p50 of `--questions` questions (the dev sets' own, where their docs are among
  the sources; page titles otherwise) answered at the team level, asked in turn of each index.

Each figure is printed with the ratio sources/one repository (the goal: <= 1.2x). The box is shared
and noisy: read the ratios, measured in the same run, and the load average printed with them.
`--trees DIR...` makes one source of each folder given instead (the test's tiny fixtures).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from pydantic import SecretStr

from eval.wrapped_embedder import FillingEmbedder
from eval.repos import commit_files, run_git
from foundation.settings import Settings
from foundation.wiring import rag_config, sync_config
from rag import Embedder, Engine, ExtractiveAnswerer, Level, make_embedder, open_index
from sync.service import run_sync

SHARED = Path(__file__).resolve().parents[2] / "shared"  # from a worktree: --shared
GOAL = 1.2
WARM_UP = 2


@dataclass(frozen=True)
class Tree:
    """One source's files: a folder, or a git bundle (cloned first); `part` (k, n) takes the k-th
    of n slices of its files sorted by path; `questions` a dev set's JSON lines whose gold pages
    start with `gold_prefix`."""

    name: str
    origin: Path
    part: tuple[int, int] = (0, 1)
    questions: Path | None = None
    gold_prefix: str = ""


def shared_trees(shared: Path) -> tuple[Tree, ...]:
    """The 20 sources made of the shared trees, smallest first."""
    handbooks, handbooks_2 = shared / "eval" / "team-handbooks-dev", shared / "eval" / "team-handbooks-dev-2"
    formats, awsdocs = shared / "corpora" / "formats-dev", shared / "eval" / "awsdocs-dev"

    def aws(guide: str, part: tuple[int, int] = (0, 1), name: str = "") -> Tree:
        return Tree(name or guide.split("-developer")[0].split("-user")[0], awsdocs / "docs" / guide, part,
                    awsdocs / "golden.jsonl", f"{guide}/")

    def handbook(folder: Path, name: str, part: tuple[int, int] = (0, 1), suffix: str = "") -> Tree:
        return Tree(name + suffix, folder / f"{name}.bundle", part, folder / f"{name}.jsonl")

    return (
        handbook(handbooks, "basecamp-handbook"),
        Tree("gds-way", formats / "gds-way"),
        aws("elb-application-load-balancers-user-guide", name="elb"),
        aws("aws-iotanalytics-developer-guide"),
        Tree("vite", formats / "vite"),
        Tree("flask", formats / "flask"),
        Tree("trpc", formats / "trpc"),
        aws("amazon-forecast-developer-guide"),
        Tree("asciidoctor-pdf", formats / "asciidoctor-pdf"),
        handbook(handbooks_2, "tts-handbook"),
        handbook(handbooks_2, "moj-cloud-platform"),
        Tree("openshift-runbooks", shared / "corpora" / "openshift-runbooks" / "openshift-runbooks.bundle"),
        Tree("httpx", formats / "httpx"),
        Tree("jekyll", formats / "jekyll"),
        Tree("feast", formats / "feast"),
        handbook(handbooks, "sourcegraph-handbook", (0, 2), "-1"),
        handbook(handbooks, "sourcegraph-handbook", (1, 2), "-2"),
        aws("aws-lambda-developer-guide"),
        aws("amazon-rds-user-guide", (0, 2), "rds-1"),
        aws("amazon-rds-user-guide", (1, 2), "rds-2"),
    )


@dataclass(eq=False)
class RememberingEmbedder(FillingEmbedder):
    """The model, remembering every vector it made by text: a second first sync then costs
    everything but the model."""

    vectors: dict[str, np.ndarray] = field(default_factory=dict)

    def known(self, texts: list[str]) -> dict[int, np.ndarray]:
        return {i: self.vectors[t] for i, t in enumerate(texts) if t in self.vectors}

    def learn(self, text: str, vector: np.ndarray) -> None:
        self.vectors[text] = vector


@dataclass
class Layout:
    """The sources' repositories and the one repository holding them all, in `scratch`."""

    sources: dict[str, Path]
    one: Path
    questions: list[str]
    files: int


def make_layout(trees: list[Tree], scratch: Path, wanted: int) -> Layout:
    sources: dict[str, Path] = {}
    one = scratch / "one-repo"
    one.mkdir(parents=True)
    run_git(one, "init", "-q")
    questions: list[list[str]] = []
    files = 0
    for tree in trees:
        root = tree.origin
        if root.suffix == ".bundle":
            root = scratch / "clones" / root.stem
            if not root.exists():
                subprocess.run(["git", "clone", "-q", str(tree.origin), str(root)], check=True)
        every = sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.relative_to(root).parts)
        k, n = tree.part
        chosen = every[k * len(every) // n:(k + 1) * len(every) // n]
        repo = scratch / "sources" / tree.name
        for path in chosen:
            relative = path.relative_to(root)
            for target in (repo / relative, one / tree.name / relative):
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)
        run_git(repo, "init", "-q")
        commit_files(repo, {}, f"{tree.name}: {len(chosen)} files")
        sources[tree.name] = repo
        questions.append(asked(tree, repo))
        files += len(chosen)
    commit_files(one, {}, f"{len(trees)} trees")
    return Layout(sources, one, interleaved(questions, wanted), files)


def asked(tree: Tree, repo: Path) -> list[str]:
    """The dev set's questions about this tree's pages, or a question per page title."""
    if tree.questions is not None:
        cases = [json.loads(line) for line in tree.questions.read_text().splitlines() if line.strip()]
        mine = [c["question"] for c in cases if not c.get("history") and c.get("answerable", True)
                and any(str(g).startswith(tree.gold_prefix) for g in c.get("gold_doc_ids", []))
                and any((repo / str(g)).is_file() for g in c.get("gold_doc_ids", []))]
        if mine:
            return mine
    titles = []
    for page in sorted(repo.rglob("*.md")) + sorted(repo.rglob("*.rst")) + sorted(repo.rglob("*.adoc")):
        heading = next((line.lstrip("#= ").strip() for line in page.read_text(errors="replace").splitlines()
                        if line.startswith(("# ", "= "))), "")
        if heading:
            titles.append(f"What does the {heading} page say?")
    return titles


def interleaved(lists: list[list[str]], wanted: int) -> list[str]:
    """Up to `wanted` questions, taken from each list in turn."""
    out: list[str] = []
    for depth in range(max((len(q) for q in lists), default=0)):
        out += [q[depth] for q in lists if depth < len(q)]
    return out[:wanted]


def settings_of(data: Path, layout: Layout, sources: bool) -> Settings:
    values: dict[str, object] = {"data_dir": str(data), "default_level": "team", "sync_fetch_retries": 0}
    if sources:
        path = data.parent / f"{data.name}-sources.toml"
        path.write_text("".join(f'[[source]]\nname = "{name}"\nrepo = "{repo}"\n\n'
                                for name, repo in layout.sources.items()))
        values["sources"] = str(path)
    else:
        values["repo"] = SecretStr(str(layout.one))
    return Settings(_env_file=None, **values)  # type: ignore[arg-type]


def timed_sync(settings: Settings, embedder: Embedder) -> tuple[float, int]:
    """Seconds of one sync and the chunks it embedded or took from its cache."""
    started = time.perf_counter()
    report = run_sync(sync_config(settings), embedder)
    return time.perf_counter() - started, report.chunks_embedded + report.chunks_reused


def ratio_line(what: str, one: float, many: float, unit: str = "s") -> tuple[str, float]:
    ratio = many / one if one else float("inf")
    shown = (lambda x: f"{x * 1000:.0f} ms") if unit == "ms" else (lambda x: f"{x:.2f} s")
    return f"{what}: one repo {shown(one)}, sources {shown(many)}: {ratio:.2f}x", ratio


def edit(layout: Layout, round_: int) -> tuple[str, str]:
    """One Markdown page of one source (a different one each round), as (source, path)."""
    names = list(layout.sources)
    name = names[(round_ * 7) % len(names)]
    pages = sorted(p for p in layout.sources[name].rglob("*.md") if ".git" not in p.parts)
    if not pages:
        pages = sorted(p for p in layout.sources[name].rglob("*") if p.is_file() and ".git" not in p.parts
                       and p.suffix in (".rst", ".adoc", ".mdx"))
    return name, str(pages[(round_ * 13) % len(pages)].relative_to(layout.sources[name]))


def change_one_file(layout: Layout, round_: int) -> str:
    name, path = edit(layout, round_)
    line = f"\n\nRevision {round_}: the on-call engineer confirms this page after each incident review.\n"
    for repo, relative in ((layout.sources[name], path), (layout.one, f"{name}/{path}")):
        text = (repo / relative).read_text(errors="replace")
        commit_files(repo, {relative: text + line}, f"edit {relative}")
    return f"{name}:{path}"


async def latencies(engines: dict[str, Engine], questions: list[str]) -> dict[str, list[float]]:
    """Each question asked of each index in turn, which goes first alternating (the first to hear
    a question pays for what the process then keeps: ~0.1 s more on the dev sets); the first
    WARM_UP not counted."""
    seconds: dict[str, list[float]] = {name: [] for name in engines}
    for i, question in enumerate(questions[:WARM_UP] + questions):
        for name, engine in (list(engines.items()) if i % 2 else list(engines.items())[::-1]):
            started = time.perf_counter()
            await engine.ask(question, Level.team)
            if i >= WARM_UP:
                seconds[name].append(time.perf_counter() - started)
    return seconds


def run(trees: list[Tree], scratch: Path, model: Embedder, questions: int, rounds: int, cold: bool) -> bool:
    load_before = os.getloadavg()
    layout = make_layout(trees, scratch, questions)
    print(f"bench-sources: {len(layout.sources)} sources ({', '.join(layout.sources)}), {layout.files} files; "
          f"one repository with the same files under {len(layout.sources)} folders; "
          f"load average {' '.join(f'{x:.1f}' for x in load_before)}")
    ratios: dict[str, float] = {}

    remembered = RememberingEmbedder(model)
    one_cold, chunks = timed_sync(settings_of(scratch / "one-cold", layout, False), remembered)
    one_model = remembered.model_s
    if cold:
        own = RememberingEmbedder(model)
        many_cold, _ = timed_sync(settings_of(scratch / "sources-cold", layout, True), own)
        line, ratios["first sync, embedding included"] = ratio_line(
            f"first sync, embedding included (cold vector cache, {chunks} chunks)", one_cold, many_cold)
        print(f"{line} (model {one_model:.1f} s / {own.model_s:.1f} s)")
    else:
        print(f"first sync, embedding included (cold vector cache, {chunks} chunks): one repo {one_cold:.2f} s "
              f"(model {one_model:.1f} s of it); sources not run cold (--cold)")

    before = remembered.embedded
    settings = {"one repo": settings_of(scratch / "one", layout, False),
                "sources": settings_of(scratch / "sources", layout, True)}
    many_warm, _ = timed_sync(settings["sources"], remembered)
    one_warm, _ = timed_sync(settings["one repo"], remembered)
    line, ratios["first sync, embedding excluded"] = ratio_line(
        "first sync, embedding excluded (vectors remembered from the cold run)", one_warm, many_warm)
    print(f"{line} ({remembered.embedded - before} texts the model embedded in these two)")

    changed: dict[str, list[float]] = {"one repo": [], "sources": []}
    noop: dict[str, list[float]] = {"one repo": [], "sources": []}
    for round_ in range(rounds):
        where = change_one_file(layout, round_)
        for name in (("sources", "one repo") if round_ % 2 else ("one repo", "sources")):
            changed[name].append(timed_sync(settings[name], model)[0])
        for name in (("sources", "one repo") if round_ % 2 else ("one repo", "sources")):
            noop[name].append(timed_sync(settings[name], model)[0])
        print(f"  round {round_ + 1}: changed {where}: one repo {changed['one repo'][-1]:.2f} s, sources "
              f"{changed['sources'][-1]:.2f} s; no-op {noop['one repo'][-1]:.2f} s, {noop['sources'][-1]:.2f} s")
    for what, figures in ((f"one-file change in one source (median of {rounds})", changed),
                          (f"no-op sync of all (median of {rounds})", noop)):
        line, ratios[what.split(" (")[0]] = ratio_line(what, statistics.median(figures["one repo"]),
                                                       statistics.median(figures["sources"]))
        print(line)

    engines = {name: Engine(rag_config(s), open_index(rag_config(s).index), model, ExtractiveAnswerer())
               for name, s in settings.items()}
    seconds = asyncio.run(latencies(engines, layout.questions))
    line, ratios["question latency p50"] = ratio_line(
        f"question latency p50 over {len(layout.questions)} questions", statistics.median(seconds["one repo"]),
        statistics.median(seconds["sources"]), "ms")
    print(line)
    missed = [name for name, ratio in ratios.items() if ratio > GOAL]
    print(f"load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}; sources/one repo within {GOAL}x: "
          + ("PASS" if not missed else "FAIL: " + ", ".join(missed)))
    return not missed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-sources", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", type=int, default=20, help="how many of the shared trees (at most 20, "
                        "smallest first)")
    parser.add_argument("--shared", type=Path, default=SHARED, help=f"the shared corpora (default {SHARED})")
    parser.add_argument("--trees", nargs="+", type=Path, help="one source per folder given, instead of ../shared")
    parser.add_argument("--questions", type=int, default=20, help="questions timed (p50)")
    parser.add_argument("--rounds", type=int, default=3, help="one-file changes, each followed by a no-op sync")
    parser.add_argument("--cold", action="store_true", help="also the sources' first sync with a cold vector cache")
    args = parser.parse_args(argv[1:])
    if args.trees:
        trees = [Tree(folder.name.lower(), folder.resolve()) for folder in args.trees]
    else:
        trees = list(shared_trees(args.shared)[:args.sources])
        missing = [str(t.origin) for t in trees if not t.origin.exists()]
        if missing:
            print(f"eval bench-sources: {missing[0]} is not there (the shared corpora, ../shared)", file=sys.stderr)
            return 2
    model = make_embedder(rag_config(Settings(_env_file=None)))
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as scratch:
        ok = run(trees, Path(scratch), model, args.questions, args.rounds, args.cold)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(["bench-sources", *sys.argv[1:]]))
