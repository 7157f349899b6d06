"""`python -m eval run`: score retrieval and answers against golden sets; fail below thresholds.

Retrieval metrics (hit rate@k, MRR, recall@k, nDCG@10) are measured on `Engine.search` over the
answerable cases, at each case's level: the k chunks it selects, reduced to their documents in
order. Answer metrics (abstention, answered rate, citations, leaks, answer F1, latency) are
measured on `Engine.ask`. `--compare` adds the retrieval metrics of dense-only and BM25-only
search (answers are always produced by the configured hybrid retrieval). Several sets (repeated
--docs/--golden pairs or --suite, see eval/sets.py) are reported side by side with their macro
average, each on its own index.

Exit status: 0 when every threshold is met, 1 when one is missed, 2 for unusable input.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from collections.abc import Callable
from typing import Any, Sequence

from foundation.errors import ACTIONABLE
from foundation.settings import Settings
from foundation.wiring import rag_config
from eval import metrics
from eval.candidates import feedback_report
from eval.facts import fact_report, pooled, with_overlay
from eval.procedures import procedure_report
from eval.golden import GoldenCase, GoldenError, load_golden, load_thresholds, thresholds_path
from eval.sets import EvalSet, choose, open_engine, prepare, run_closing
from rag import (SIGNALS, Answer, EmbeddingError, Engine, Level, Mode, RagConfig, Retrieval, Scope, StoreError,
                 make_embedder)
from rag.scope import documents_in
from sync.gitcmd import GitError

COMPARED: tuple[Mode, ...] = tuple(signal.name for signal in SIGNALS)  # each list searched alone
STAGES = ("embed", "retrieve", "generate", "total")
# A list's weight as the report and the sweep's grid name it (`bm25_weight`): list name -> key.
WEIGHT_KEYS = {signal.name: f"{signal.name}_weight" for signal in SIGNALS}
TUNED_SETTINGS = (
    "top_k", "candidates", "min_similarity", "rrf_k", *WEIGHT_KEYS.values(), "fusion_coverage_power",
    "doc_fusion", "max_chunks_per_doc", "mmr_lambda", "no_access_margin", "chunk_size", "chunk_overlap",
)
NDCG_K = 10
# "The docs don't cover it" is no_match whether retrieval found nothing or the generator declined
# what it found: a golden case should not depend on which stage noticed.
SAME_REASON = {"no_match": {"no_match", "declined"}}


@dataclass
class Failures:
    """Why each failing case failed, in the order the cases were run."""

    reasons: dict[str, list[str]] = field(default_factory=dict)
    leaked: set[str] = field(default_factory=set)  # cases that saw a doc above their level

    def add(self, case_id: str, reason: str) -> None:
        self.reasons.setdefault(case_id, []).append(reason)

    def leak(self, case_id: str, where: str) -> None:
        self.leaked.add(case_id)
        self.add(case_id, f"leak: {where} a doc above the question's level")


async def search_all(engine: Engine, cases: Sequence[GoldenCase], mode: Mode,
                     scope: Scope | None = None) -> list[tuple[Retrieval, Any, dict]]:
    within = await documents_in(engine.store, scope) if scope is not None else None
    return [await engine.search(case.question, case.level, list(case.history), mode, within=within)
            for case in cases]


def retrieval_report(engine: Engine, cases: Sequence[GoldenCase], mode: Mode, failures: Failures,
                     scope: Scope | None = None) -> dict[str, Any]:
    """Doc-level retrieval metrics of `Engine.search` in one mode (within `scope`, as a channel's
    `only` scope searches), plus its embed/retrieve latency."""
    ranks: list[int | None] = []
    recalls, ndcgs = [], []
    timings: dict[str, list[float]] = {"embed": [], "retrieve": []}
    for case, (retrieval, _, spent) in zip(cases, run_closing(engine, search_all(engine, cases, mode, scope))):
        for stage in timings:
            timings[stage].append(spent[f"{stage}_ms"])
        if any(c.row["access_rank"] > case.level for c in retrieval.selected):
            failures.leak(case.id, f"{mode} search selected")
        if not case.answerable:
            continue
        ranking = metrics.doc_ranking(c.row["doc_path"] for c in retrieval.selected)
        rank = metrics.first_gold_rank(ranking, case.gold_doc_ids)
        if rank is None:
            failures.add(case.id, f"miss: no gold doc among the {mode} top {engine.config.retrieval.top_k}")
        ranks.append(rank)
        recalls.append(metrics.recall(ranking, case.gold_doc_ids))
        ndcgs.append(metrics.ndcg(ranking, case.gold_doc_ids, NDCG_K))
    return {
        "hit_rate": metrics.hit_rate(ranks),
        "mrr": metrics.mrr(ranks),
        "recall": metrics.mean(recalls),
        f"ndcg@{NDCG_K}": metrics.mean(ndcgs),
        "latency_ms": latency(timings),
    }


def latency(timings: dict[str, list[float]]) -> dict[str, dict[str, float | None]]:
    return {stage: {"p50": metrics.percentile(v, 50), "p95": metrics.percentile(v, 95)} for stage, v in timings.items()}


async def ask_all(engine: Engine, cases: Sequence[GoldenCase], scope: Scope | None = None) -> list[Answer]:
    return [await engine.ask(case.question, case.level, list(case.history), scope=scope) for case in cases]


def answer_leaked(case: GoldenCase, answer: Answer) -> bool:
    """Whether the answer cites, or was built from, a document above the question's level."""
    accesses = [c.access for c in answer.citations] + [r["access"] for r in answer.retrieved]
    return any(Level.parse(access) > case.level for access in accesses)


def citations_valid(case: GoldenCase, answer: Answer) -> bool:
    """Every citation names a source that was given to the generator and is within the level."""
    given = answer.retrieved
    return all(
        1 <= c.n <= len(given) and given[c.n - 1]["doc_path"] == c.doc_path and Level.parse(c.access) <= case.level
        for c in answer.citations
    )


def answer_report(engine: Engine, cases: Sequence[GoldenCase], failures: Failures,
                  scope: Scope | None = None) -> dict[str, Any]:
    answers = run_closing(engine, ask_all(engine, cases, scope))
    timings: dict[str, list[float]] = {stage: [] for stage in STAGES}
    valid, cites_gold, f1s, right, pointed, pointed_gold = [], [], [], [], [], []
    for case, answer in zip(cases, answers):
        for stage in STAGES:
            if (ms := answer.diagnostics.timings_ms.get(f"{stage}_ms")) is not None:
                timings[stage].append(ms)
        if answer_leaked(case, answer):
            failures.leak(case.id, "the answer cited or was built from")
        if answer.answered:
            valid.append(citations_valid(case, answer))
            if not valid[-1]:
                failures.add(case.id, "invalid citation")
        if case.answerable:
            if answer.answered:
                cites_gold.append(any(c.doc_path in case.gold_doc_ids for c in answer.citations))
            elif answer.confidence == "not_sure":
                failures.add(case.id, "not sure on an answerable question")
            else:
                failures.add(case.id, f"abstained ({answer.abstain_reason}) on an answerable question")
                pointed.append(answer.near_miss is not None)  # a false "I don't know" that names a page
                if answer.near_miss:
                    pointed_gold.append(answer.near_miss.doc_path in case.gold_doc_ids)
        elif answer.answered:
            failures.add(case.id, "answered an unanswerable question")
        elif (case.expect_reason
              and answer.abstain_reason not in SAME_REASON.get(case.expect_reason, {case.expect_reason})):
            failures.add(case.id, f"abstained with {answer.abstain_reason}, expected {case.expect_reason}")
        if case.answer_contains:
            right.append(answer.answered and all(t.lower() in answer.answer.lower() for t in case.answer_contains))
            if not right[-1]:
                failures.add(case.id, "the answer lacks: " + " / ".join(case.answer_contains))
        if case.gold_answer is not None:
            f1s.append(metrics.token_f1(answer.answer, case.gold_answer) if answer.answered else 0.0)
    answerable = [a.answered for c, a in zip(cases, answers) if c.answerable]
    precision, recall = metrics.precision_recall([not a.answered for a in answers], [not c.answerable for c in cases])
    return {
        "answered_rate": metrics.mean(answerable),
        "abstention_precision": precision,
        "abstention_recall": recall,
        "citation_validity": metrics.mean(valid),
        "citation_gold_rate": metrics.mean(cites_gold),
        "answer_f1": metrics.mean(f1s),
        "right_sentence_rate": metrics.mean(right),
        "declined_with_pointer_rate": metrics.mean(pointed),
        "pointer_gold_rate": metrics.mean(pointed_gold),
        **procedure_report(cases, answers, failures),
        **fact_report(cases, answers, failures),
        **model_report(engine, answers),
        "latency_ms": latency(timings),
    }


def model_report(engine: Engine, answers: Sequence[Answer]) -> dict[str, Any]:
    """With a model: how many answers are the model's words as the citation check kept them, and
    how many times the docs were quoted instead, by why (Answer.fallback); nothing without one."""
    if engine.generator is engine.quoter:
        return {}
    return {"model_kept": sum(a.answered and not a.fallback and a.model == engine.generator.name for a in answers),
            "fallbacks": dict(Counter(a.fallback for a in answers if a.fallback))}


def model_line(report: dict[str, Any]) -> str:
    fallbacks = ", ".join(f"{n} {why}" for why, n in report["fallbacks"].items()) or "none"
    return f"model answers kept by the citation check: {report['model_kept']}; the docs quoted instead: {fallbacks}"


def tuned_settings(config: RagConfig) -> dict[str, Any]:
    """The values of TUNED_SETTINGS (named as the settings are, a list's weight by WEIGHT_KEYS)
    that this engine runs with."""
    weights = config.retrieval.list_weights
    values = {**vars(config.retrieval), "no_access_margin": config.answer.no_access_margin,
              "chunk_size": config.chunking.size, "chunk_overlap": config.chunking.overlap,
              **{key: weights[name] for name, key in WEIGHT_KEYS.items()}}
    return {name: values[name] for name in TUNED_SETTINGS}


def evaluate(engine: Engine, cases: Sequence[GoldenCase], compare: bool = False,
             scope: Scope | None = None) -> dict[str, Any]:
    """The report of one run: configured (hybrid) retrieval and answers, optionally other modes;
    `scope`: asked as in a channel with that scope (eval/shared_index.py: a set's own source)."""
    failures = Failures()
    report: dict[str, Any] = {
        "cases": len(cases),
        "answerable": sum(c.answerable for c in cases),
        "k": engine.config.retrieval.top_k,
        "mode": "hybrid",
        "settings": tuned_settings(engine.config),
    }
    retrieval = retrieval_report(engine, cases, "hybrid", failures, scope)
    search_latency = retrieval.pop("latency_ms")
    report |= retrieval | answer_report(engine, cases, failures, scope)
    report["leaks"] = len(failures.leaked)
    report["search_latency_ms"] = search_latency
    report["failures"] = list(failures.reasons)
    report["failure_reasons"] = failures.reasons
    if compare:
        report["compare"] = {}
        for mode in COMPARED:
            seen = Failures()  # the other modes' misses are what the comparison shows, not failures
            report["compare"][mode] = retrieval_report(engine, cases, mode, seen, scope) | {"leaks": len(seen.leaked)}
    return report


# -- presentation ---------------------------------------------------------------------------------
ROWS = (
    ("hit_rate", "hit rate@{k}"),
    ("mrr", "MRR"),
    ("recall", "recall@{k}"),
    (f"ndcg@{NDCG_K}", f"nDCG@{NDCG_K}"),
    ("answered_rate", "answered rate"),
    ("abstention_precision", "abstention precision"),
    ("abstention_recall", "abstention recall"),
    ("citation_validity", "citation validity"),
    ("citation_gold_rate", "cites a gold doc"),
    ("answer_f1", "answer token F1"),
    ("right_sentence_rate", "right sentence quoted"),
    ("declined_with_pointer_rate", "declined with a pointer"),
    ("pointer_gold_rate", "pointer on a gold page"),
    ("steps_in_order_rate", "steps all, in order"),
    ("fences_balanced_rate", "fences balanced"),
    ("exception_rate", "exception mentioned"),
    ("fact_held_rate", "fact held"),
    ("fact_held_confident", "fact held, gold cited"),
    ("fact_shown", "fact shown"),
    ("followup_fact_shown", "follow-ups fact shown"),
    ("gold_shown_rate", "gold page shown"),
    ("not_sure_rate", "not sure (covered)"),
    ("declined_rate", "declined (covered)"),
    ("uncovered_answered", "answered uncovered"),
    ("uncovered_not_sure", "not sure uncovered"),
    ("answer_words_p50", "words p50"),
    ("answer_words_p90", "words p90"),
    ("prose_words_p50", "prose words p50"),
    ("prose_words_p90", "prose words p90"),
    ("markup_residue_rate", "markup residue"),
    ("leaks", "leaks"),
)


def _cell(value: Any) -> str:
    if value is None:
        return "n/a"
    return str(value) if isinstance(value, int) else f"{value:.3f}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


def render(report: dict[str, Any]) -> str:
    columns = {"hybrid": report} | report.get("compare", {})
    lines = [f"{report['cases']} cases ({report['answerable']} answerable) · k={report['k']} · "
             + ", ".join(f"{k}={v}" for k, v in report["settings"].items() if k != "top_k"),
             f"{'metric':<22}" + "".join(f"{name:>9}" for name in columns)]
    for key, label in ROWS:
        cells = [_cell(col[key]) if key in col else "-" for col in columns.values()]
        lines.append(f"{label.format(k=report['k']):<22}" + "".join(f"{c:>9}" for c in cells))
    lines.append("latency ms (p50 / p95): " + ", ".join(
        f"{stage} {_ms(v['p50'])} / {_ms(v['p95'])}" for stage, v in report["latency_ms"].items()
    ))
    if "model_kept" in report:
        lines.append(model_line(report))
    for case_id, reasons in report["failure_reasons"].items():
        lines.append(f"  {case_id}: {'; '.join(reasons)}")
    for case_id, changed in report.get("feedback", {}).get("docs_changed", {}).items():
        lines.append(f"  {case_id}: docs changed since feedback: "
                     + ", ".join(f"{p} ({how})" for p, how in changed.items()))
    return "\n".join(lines)


def render_sets(reports: dict[str, dict[str, Any]], macro: dict[str, Any]) -> str:
    """Several sets side by side, with their macro average (each set weighs the same)."""
    columns = reports | {"macro": macro}
    k = next(iter(reports.values()))["k"]
    lines = [" · ".join(f"{name}: {r['cases']} cases ({r['answerable']} answerable)" for name, r in reports.items()),
             f"{'metric':<22}" + "".join(f"{name[:14]:>15}" for name in columns)]
    rows = list(ROWS) + [(f"{mode}:{key}", f"{mode} {label}") for mode in COMPARED for key, label in ROWS[:2]]
    for key, label in rows:
        cells = [_cell(_metric(col, key)) for col in columns.values()]
        if any(c != "n/a" for c in cells):
            lines.append(f"{label.format(k=k):<22}" + "".join(f"{c:>15}" for c in cells))
    for name, report in reports.items():
        missed = report["thresholds"]["missed"]
        lines.append(f"{name}: {len(report['failures'])} failing cases; thresholds "
                     + ("all met" if not missed else "MISSED: " + "; ".join(missed))
                     + ("" if report["thresholds"]["file"] else " (no thresholds file)"))
        if "model_kept" in report:
            lines.append(f"{name}: {model_line(report)}")
    return "\n".join(lines)


def _metric(report: dict[str, Any], key: str) -> Any:
    mode, _, name = key.rpartition(":")
    return report.get("compare", {}).get(mode, {}).get(name) if mode else report.get(key)


def macro_average(reports: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean of each metric over the sets that measured it."""
    keys = [key for key, _ in ROWS] + [f"{mode}:{key}" for mode in COMPARED for key, _ in ROWS[:2]]
    macro: dict[str, Any] = {}
    for key in keys:
        values = [v for r in reports if isinstance(v := _metric(r, key), (int, float))]
        if values:
            mode, _, name = key.rpartition(":")
            target = macro.setdefault("compare", {}).setdefault(mode, {}) if mode else macro
            target[name] = sum(values) / len(values)
    return macro


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval run", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--thresholds", type=Path,
                        help="thresholds JSON (default: <golden>.thresholds.json or thresholds.json beside it)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--compare", action="store_true", help="also score dense-only and BM25-only retrieval")
    return parser


def add_set_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--docs", action="append",
                        help="docs folder, repeatable (default: $DOCSBOT_DOCS_DIR or docs-sync); indexed if needed")
    parser.add_argument("--golden", action="append", type=Path,
                        help="golden JSONL file, repeatable: the n-th goes with the n-th --docs "
                             "(default: eval/golden.jsonl and eval/golden*.jsonl)")
    parser.add_argument("--suite", type=Path,
                        help="suite file naming several sets, e.g. eval/dev-suite.json (the three dev sets)")
    parser.add_argument("--set", action="append", help="with --suite: only this set, repeatable")


def engines(
    args: argparse.Namespace, engine: Engine | None, settings: Settings | None
) -> list[tuple[EvalSet, Engine, Settings]]:
    """One engine per set, on its own index, with its settings; an injected engine (built from
    `settings`) serves a single set."""
    chosen = choose(args.docs, args.golden, args.suite, args.set)
    base = settings or Settings()
    if engine is not None and len(chosen) == 1:
        return [(chosen[0], engine, base)]
    embedder = engine.embedder if engine else make_embedder(rag_config(base))
    several = len(chosen) > 1
    return [(s, open_engine(own := s.settings(base, several), embedder), own) for s in chosen]


def run_set(engine: Engine, settings: Settings, eval_set: EvalSet, args: argparse.Namespace) -> dict[str, Any]:
    golden = list(eval_set.golden)
    cases = with_overlay(load_golden(golden), eval_set.facts)
    thresholds = load_thresholds(args.thresholds or eval_set.thresholds or thresholds_path(golden[0]))
    root = prepare(engine, settings, eval_set, cases, sys.stderr)
    report = {"golden": [str(p) for p in golden], "docs": str(root)} | evaluate(engine, cases, args.compare)
    report["feedback"] = feedback_report(engine.store, cases, report["failure_reasons"])
    misses = thresholds.misses(report)
    if failing := report["feedback"]["failing"]:  # a promoted 👎 case is a regression test
        misses.append(f"{len(failing)} promoted feedback case(s) failing: {', '.join(failing)}")
    report["thresholds"] = {"file": str(thresholds.source) if thresholds.source else None, "missed": misses}
    return report


def run(args: argparse.Namespace, engine: Engine | None, settings: Settings | None) -> int:
    reports = {s.name: run_set(e, own, s, args) for s, e, own in engines(args, engine, settings)}
    missed = any(r["thresholds"]["missed"] for r in reports.values())
    if len(reports) == 1:
        report = next(iter(reports.values()))
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print(render(report))
            misses = report["thresholds"]["missed"]
            print(f"thresholds ({report['thresholds']['file'] or 'no thresholds file'}): "
                  + ("all met" if not misses else "MISSED: " + "; ".join(misses)))
        return 1 if missed else 0
    macro = macro_average(list(reports.values())) | pooled(reports)
    if args.json:
        print(json.dumps({"sets": reports, "macro": macro}, indent=2))
    else:
        print(render_sets(reports, macro))
    return 1 if missed else 0


def main(argv: list[str], engine: Engine | None = None, settings: Settings | None = None) -> int:
    """Entry point of the `python -m eval` dispatcher (argv[0] == "run"); an engine can be
    injected, with the settings it was built from."""
    args = build_parser().parse_args(argv[1:])
    return reported("eval", lambda: run(args, engine, settings))


def reported(prog: str, call: Callable[[], int]) -> int:
    """`call`'s exit code; an error a person must act on is one line (exit 2), Ctrl-C exit 130."""
    try:
        return call()
    except (*ACTIONABLE, GoldenError, StoreError, EmbeddingError, GitError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
