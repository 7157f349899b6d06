"""`python -m eval shared-index`: dev sets asked of one index holding all their docs (issue 55 item 5).

Each set chosen (a --suite with two or more --set, or --docs/--golden pairs) is first scored as
`eval run --suite` scores it, on its own index (built where `eval run` builds it, when missing).
Then each set's docs folder becomes one source of a shared index: a real git repository in a
temporary folder (the folder's files copied and committed), named after the set, with the set's
include globs and default level, written to a sources file (DOCSBOT_SOURCES) and synced by the
multi-source sync, so every document is stored as `<set>:<path>`. Each set's golden questions are
asked of that one index at their own levels, their gold paths mapped to `<set>:<path>`, and
scored with the same metrics, twice: searching the whole index (the goal: each set's hit@k and
fact shown within one question of its own figures, a gain being no miss; the exit status) and
within the set's own source, as a channel scoped to it (`source:<set>`, "only") asks, which
leaves what sharing the index changes besides the other sources' pages (their words in the
full-text statistics, the vector index over more rows). The other metrics are printed beside them.

Embedding: the vector cache is keyed by the hash of a chunk's text (its heading path and body,
rag/chunking.py text_hash), not by its path, so the shared sync takes each text's vector from the
own indexes' caches and the model embeds only what none of them has (printed: 0 when the own
indexes are current).

Each question a set lost is listed with why: `eval run`'s failure reasons in the shared index,
and the pages the shared search put in its top k, with how many came from other sources.

Exit status: 0 when every set is within one question, 1 when one is not, 2 for unusable input.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from foundation.errors import UserError
from foundation.settings import Settings
from foundation.sources_file import NAME
from foundation.wiring import rag_config, sync_config
from eval.facts import with_overlay
from eval.golden import GoldenCase, load_golden
from eval.repos import commit_files, run_git
from eval.runner import add_set_options, evaluate, reported, run_set
from eval.sets import EvalSet, choose, open_engine, run_closing
from eval.wrapped_embedder import FillingEmbedder
from rag import Embedder, Engine, Index, Scope, make_embedder
from rag.chunking import text_hash
from rag.paths import SOURCE_SEPARATOR
from rag.scope import documents_in
from sync.service import run_sync

TOLERANCE = 1  # questions a set may lose in the shared index
# The figures judged, with the count each rate is over, and the failure reason (eval/runner.py,
# eval/facts.py) a case that misses it has.
JUDGED = {"hit_rate": ("answerable", "miss: "), "fact_shown": ("fact_cases", "the fact is not shown")}
SHOWN = (("mrr", "MRR"), ("fact_held_rate", "fact held"), ("citation_gold_rate", "gold cited"),
         ("not_sure_rate", "not sure"), ("declined_rate", "declined"), ("uncovered_answered", "answered uncovered"))


@dataclass(eq=False)
class BorrowingEmbedder(FillingEmbedder):
    """The model, a text's vector taken from the first of `donors` whose vector cache has it."""

    donors: tuple[Index, ...] = ()
    borrowed: int = 0

    def known(self, texts: list[str]) -> dict[int, np.ndarray]:
        hashes = [text_hash(t) for t in texts]
        found: dict[str, np.ndarray] = {}
        for donor in self.donors:
            if wanted := sorted(set(hashes) - set(found)):
                found |= donor.cached_vectors(wanted)
        known = {i: found[h] for i, h in enumerate(hashes) if h in found}
        self.borrowed += len(known)
        return known


@dataclass
class SetResult:
    """One set's reports on its own index and on the shared one (`view`: "whole", every source
    searched; "own source", within the set's own, as a channel scoped to it asks), and its judged
    figures."""

    name: str
    own: dict[str, Any]
    shared: dict[str, Any]
    view: str = "whole"
    questions: dict[str, dict[str, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for metric, (count, _) in JUDGED.items():
            of = self.own[count]
            if of and self.own[metric] is not None and self.shared[metric] is not None:
                own, shared = round(self.own[metric] * of), round(self.shared[metric] * of)
                self.questions[metric] = {"own": own, "shared": shared, "of": of, "difference": shared - own}

    @property
    def within(self) -> bool:
        return all(q["difference"] >= -TOLERANCE for q in self.questions.values())

    def lost(self) -> dict[str, list[str]]:
        """Case id -> the judged figures it had on its own index and lost on the shared one."""
        out: dict[str, list[str]] = {}
        for metric, (_, reason) in JUDGED.items():
            for case, reasons in self.shared["failure_reasons"].items():
                own = self.own["failure_reasons"].get(case, [])
                if any(r.startswith(reason) for r in reasons) and not any(r.startswith(reason) for r in own):
                    out.setdefault(case, []).append(metric)
        return out


def source_name(eval_set: EvalSet) -> str:
    if not NAME.fullmatch(eval_set.name):
        raise UserError(f"set {eval_set.name!r} cannot name a source (lower-case letters, digits, - or _): "
                        "name it so in the suite file")
    return eval_set.name


def make_repository(root: Path, repo: Path) -> Path:
    """A git repository holding a copy of the files under `root` (its own .git left out)."""
    repo.mkdir(parents=True)
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and ".git" not in relative.parts:
            (repo / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, repo / relative)
    run_git(repo, "init", "-q")
    commit_files(repo, {}, f"the docs of {root}")
    return repo


def write_sources(path: Path, sets: list[tuple[EvalSet, Path]]) -> Path:
    """The sources file: one [[source]] per set, with its include globs and default level."""
    tables = []
    for eval_set, repo in sets:
        lines = [f"name = {json.dumps(source_name(eval_set))}", f"repo = {json.dumps(str(repo))}"]
        if eval_set.include is not None:
            lines.append(f"include = {json.dumps(list(eval_set.include))}")
        if eval_set.default_level is not None:
            lines.append(f"default_level = {json.dumps(eval_set.default_level.name)}")
        tables.append("[[source]]\n" + "\n".join(lines) + "\n")
    path.write_text("\n".join(tables), encoding="utf-8")
    return path


def mapped(cases: list[GoldenCase], source: str) -> list[GoldenCase]:
    """The cases with their gold paths as the shared index stores them: `<source>:<path>`."""
    return [replace(c, gold_doc_ids=tuple(f"{source}{SOURCE_SEPARATOR}{p}" for p in c.gold_doc_ids)) for c in cases]


def set_cases(eval_set: EvalSet) -> list[GoldenCase]:
    return with_overlay(load_golden(list(eval_set.golden)), eval_set.facts)


def build_shared(base: Settings, sets: list[tuple[EvalSet, Path]], scratch: Path, model: Embedder,
                 donors: tuple[Index, ...]) -> tuple[Settings, dict[str, Any]]:
    """The shared index, synced from one repository per set; its settings and how it was built."""
    repos = [(s, make_repository(root, scratch / "sources" / source_name(s))) for s, root in sets]
    settings = base.model_copy(update={
        "data_dir": str(scratch / "index"), "sources": str(write_sources(scratch / "sources.toml", repos)),
        "repo": None, "work_dir": "", "sync_fetch_retries": 0})
    borrowing = BorrowingEmbedder(model, donors=donors)
    started = time.perf_counter()
    report = run_sync(sync_config(settings), borrowing)
    return settings, {"seconds": round(time.perf_counter() - started, 1), "documents": report.added,
                      "chunks": report.chunks_embedded + report.chunks_reused, "model_embedded": borrowing.embedded,
                      "borrowed": borrowing.borrowed, "warnings": report.warnings}


def check_gold(engine: Engine, cases: dict[str, list[GoldenCase]]) -> None:
    stored = set(engine.store.doc_hashes())
    missing = sorted({p for every in cases.values() for c in every for p in c.gold_doc_ids} - stored)
    if missing:
        raise UserError(f"gold doc ids not in the shared index: {', '.join(missing[:5])}"
                        + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))


def scope_of(name: str) -> Scope:
    return Scope.parse([f"source:{name}"], "only")


def explain(engine: Engine, result: SetResult, cases: list[GoldenCase]) -> list[dict[str, Any]]:
    """Each lost question: what it lost, its failure reasons in the shared index, and the shared
    search's top pages, with how many of them belong to other sources."""
    lost = result.lost()
    chosen = [c for c in cases if c.id in lost]
    scope = scope_of(result.name) if result.view != "whole" else None

    async def searches() -> list[list[str]]:
        within = await documents_in(engine.store, scope) if scope is not None else None
        found = [await engine.search(c.question, c.level, list(c.history), within=within) for c in chosen]
        return [list(dict.fromkeys(row.row["doc_path"] for row in r.selected)) for r, _, _ in found]

    tops = run_closing(engine, searches()) if chosen else []
    out = []
    for case, top in zip(chosen, tops):
        prefix = f"{result.name}{SOURCE_SEPARATOR}"
        gold_at = next((i for i, p in enumerate(top) if p in case.gold_doc_ids), len(top))
        out.append({"set": result.name, "view": result.view, "case": case.id, "lost": lost[case.id],
                    "reasons": result.shared["failure_reasons"][case.id], "top": top,
                    "others_above_gold": sum(not p.startswith(prefix) for p in top[:gold_at])})
    return out


def run(args: argparse.Namespace, settings: Settings | None, model: Embedder | None) -> int:
    load_before = os.getloadavg()
    base = settings or Settings()
    sets = choose(args.docs, args.golden, args.suite, args.set)
    if len(sets) < 2:
        raise UserError("a shared index needs two sets or more (--suite with --set, or --docs/--golden pairs)")
    for eval_set in sets:
        source_name(eval_set)
    embedder = model or make_embedder(rag_config(base))
    # Each on its own index, where `eval run` keeps it for several sets.
    chosen = [(s, open_engine(own_settings := s.settings(base, True), embedder), own_settings) for s in sets]
    own = {s.name: run_set(engine, at, s, args) for s, engine, at in chosen}
    with tempfile.TemporaryDirectory(prefix="eval-shared-index-") as folder:
        shared_settings, built = build_shared(
            base, [(s, Path(own[s.name]["docs"])) for s, _, _ in chosen], Path(folder), embedder,
            tuple(engine.store for _, engine, _ in chosen))
        shared = open_engine(shared_settings, embedder)
        cases = {s.name: mapped(set_cases(s), source_name(s)) for s, _, _ in chosen}
        check_gold(shared, cases)
        results = [SetResult(name, own[name], evaluate(shared, every)) for name, every in cases.items()]
        results += [SetResult(name, own[name], evaluate(shared, every, scope=scope_of(name)), "own source")
                    for name, every in cases.items()]
        lost = [row for r in results for row in explain(shared, r, cases[r.name])]
    built["load_average"] = [round(x, 1) for x in (*load_before, *os.getloadavg())]
    whole = [r for r in results if r.view == "whole"]
    if args.json:
        print(json.dumps({"sync": built, "lost": lost, "sets": {name: {"own": own[name], **{
            r.view: {"report": r.shared, "questions": r.questions, "within": r.within}
            for r in results if r.name == name}} for name in own}}, indent=2))
    else:
        print(render(results, built, lost))
    return 0 if all(r.within for r in whole) else 1


def render(results: list[SetResult], built: dict[str, Any], lost: list[dict[str, Any]]) -> str:
    load = built["load_average"]
    lines = [f"shared index: {len(results) // 2} sets as as many sources, {built['documents']} documents, "
             f"{built['chunks']} chunks, synced in {built['seconds']} s; the model embedded "
             f"{built['model_embedded']} texts ({built['borrowed']} taken from the own indexes' caches); "
             f"load average {load[0]} {load[1]} {load[2]} before, {load[3]} {load[4]} {load[5]} after",
             f"{'set':<22}{'searched':<12}{'figure':<12}{'own':>7}{'shared':>9}{'Δ questions':>13}  verdict"]
    for r in results:
        for metric, q in r.questions.items():
            label = "hit@k" if metric == "hit_rate" else "fact shown"
            verdict = "PASS" if q["difference"] >= -TOLERANCE else "MISS"
            lines.append(f"{r.name[:21]:<22}{r.view:<12}{label:<12}{q['own']:>4}/{q['of']:<2}{q['shared']:>6}/"
                         f"{q['of']:<2}{q['difference']:>+13d}  {verdict}")
    lines.append(f"{'own, whole, own src':<22}" + "".join(f"{r.name[:23]:>24}" for r in results if r.view == "whole"))
    for key, label in SHOWN:
        cells = [_cells(r.own.get(key), *(x.shared.get(key) for x in results if x.name == r.name))
                 for r in results if r.view == "whole"]
        lines.append(f"{label:<22}" + "".join(f"{cell:>24}" for cell in cells))
    for row in lost:
        lines.append(f"lost ({row['view']}) {row['set']}/{row['case']} ({', '.join(row['lost'])}): "
                     f"{'; '.join(row['reasons'])}; top: {', '.join(row['top']) or 'nothing'} "
                     f"({row['others_above_gold']} of other sources above the gold page)")
    for view in ("whole", "own source"):
        missed = [r.name for r in results if r.view == view and not r.within]
        lines.append(f"searching the {view}: every set within {TOLERANCE} question of its own figures: "
                     + ("PASS" if not missed else "MISS: " + ", ".join(missed)))
    return "\n".join(lines)


def _cells(*values: Any) -> str:
    return ", ".join("n/a" if v is None else str(v) if isinstance(v, int) else f"{v:.2f}" for v in values)


def main(argv: list[str], settings: Settings | None = None, model: Embedder | None = None) -> int:
    """Entry point of the `python -m eval` dispatcher; settings and the embedding model can be
    injected (the test's)."""
    parser = argparse.ArgumentParser(prog="python -m eval shared-index", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--json", action="store_true", help="print the reports as JSON")
    parser.set_defaults(thresholds=None, compare=False)
    args = parser.parse_args(argv[1:])
    return reported("eval shared-index", lambda: run(args, settings, model))

