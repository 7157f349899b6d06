"""`python -m eval sweep`: try a grid of retrieval settings on several sets at once and rank the
grid points by their worst set, so no default is tuned to one corpus.

Each question is embedded and searched once (every list, `--depth` deep); every grid point then
replays the ranking (rag.retrieval.rank) over those cached hits, so a grid of hundreds of points
costs seconds. The grid tried is printed with each point's per-set, worst and macro hit rate@k
and MRR. A point is scored by hit rate + MRR; points are ranked by their worst set's (ties: the
macro's). A grid point fits nothing, so each set's figure at a point is already a left-out figure
and the worst set is the worst left-out one; what is fitted is the choice of the point, so the
sweep also leaves each set out in turn: the point the other sets choose, scored on the set left
out, beside that set's figure at the point chosen on every set (in sample). A set that loses much
when it is left out is one the default is tuned to. Sets marked `"tune": false` in the suite (the
procedure sets) are left out.
Chunk size is not in the grid (it needs a reindex per value): sweep it by running this command
on indexes built with each `DOCSBOT_CHUNK_SIZE` (the vector cache re-embeds only new text).
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from foundation.errors import ACTIONABLE
from foundation.settings import Settings
from foundation.wiring import rag_config, retrieval_config
from eval import metrics
from eval.golden import GoldenCase, GoldenError, load_golden
from eval.runner import WEIGHT_KEYS, add_set_options
from eval.sets import choose, open_engine, prepare, run_closing
from rag import (HYBRID, SIGNALS, EmbeddingError, Engine, Found, IvfTuned, Mode, StoreError, make_embedder, rank,
                 search_lists)

# The grid: every combination is tried, its axes named as the settings are, a list's weight as
# `<list>_weight` (eval/runner.py's WEIGHT_KEYS). Values around today's defaults; a best point on the edge
# of the grid says to widen it. An earlier grid over docs-sync and mtrag-govt-dev (432 points, also
# rrf_k 60, fusion_coverage_power 4, no per-document cap, min_similarity 0.32) ranked those values
# below the ones kept here.
GRID: dict[str, list[Any]] = {
    "rrf_k": [10, 30],
    "bm25_weight": [0.75, 1.0, 1.5],
    "fusion_coverage_power": [0.0, 1.0, 2.0],
    "doc_fusion": [0.0, 0.5, 1.0],
    "max_chunks_per_doc": [1, 2],
    "mmr_lambda": [0.75, 1.0],
    "min_similarity": [0.2, 0.32],  # 0.2 ranks better; 0.32 stays the default for the answers (README)
}


@dataclass
class Query:
    case: GoldenCase
    text: str
    vector: np.ndarray
    found: Found  # every list, `--depth` deep


async def collect(engine: Engine, cases: Sequence[GoldenCase], depth: int) -> list[Query]:
    """Every list of every answerable question, `depth` deep, at the question's level."""
    queries = []
    for case in cases:
        if not case.answerable:
            continue
        text = await engine.search_query(case.question, list(case.history))
        vector = (await asyncio.to_thread(engine.embedder.embed, [text]))[0]
        found = await search_lists(engine.store, vector, text, int(case.level), depth)
        queries.append(Query(case, text, vector, found))
    return queries


def score(queries: list[Query], settings: Settings, mode: Mode = HYBRID) -> dict[str, float]:
    ranks = []
    config = retrieval_config(settings)
    for q in queries:
        found = {name: hits[:config.candidates] for name, hits in q.found.items()}
        selected = rank(found, q.vector, q.text, config, mode).selected
        ranking = metrics.doc_ranking(c.row["doc_path"] for c in selected)
        ranks.append(metrics.first_gold_rank(ranking, q.case.gold_doc_ids))
    return {"hit_rate": metrics.hit_rate(ranks) or 0.0, "mrr": metrics.mrr(ranks) or 0.0}


def points(grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


_LISTS = {key: name for name, key in WEIGHT_KEYS.items()}  # a weight axis -> its list


def at_point(base: Settings, point: dict[str, Any]) -> Settings:
    """The settings with a grid point's values, a `<list>_weight` axis as that list's weight."""
    weights = {_LISTS[key]: value for key, value in point.items() if key in _LISTS}
    rest = {key: value for key, value in point.items() if key not in _LISTS}
    return base.model_copy(update=rest | {"list_weights": base.list_weights | weights})


def current(base: Settings, grid: dict[str, list[Any]]) -> dict[str, Any]:
    """Today's values of the grid's axes."""
    return {key: base.list_weights[_LISTS[key]] if key in _LISTS else getattr(base, key, None) for key in grid}


def sweep(sets: dict[str, list[Query]], base: Settings, grid: dict[str, list[Any]]) -> list[dict[str, Any]]:
    """Every grid point's per-set, worst and macro figures, in `ranked` order."""
    results = []
    for point in points(grid):
        settings = at_point(base, point)
        results.append({"point": point, "sets": {name: score(queries, settings) for name, queries in sets.items()}})
    return ranked(results)


def objective(figures: dict[str, float]) -> float:
    return figures["hit_rate"] + figures["mrr"]


def key(result: dict[str, Any], names: Sequence[str]) -> tuple[float, float]:
    """A point's rank over these sets: its worst set's hit rate + MRR, then the macro's."""
    per_set = {n: objective(result["sets"][n]) for n in names}
    return metrics.left_out_key(per_set, float(np.mean(list(per_set.values()))))


def ranked(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The points with their worst set and macro added, best worst set first (ties: macro)."""
    for r in results:
        per_set = r["sets"]
        name = metrics.worst({n: objective(f) for n, f in per_set.items()})[0]
        r["worst"] = {"set": name} | per_set[name]
        r["macro"] = {m: float(np.mean([f[m] for f in per_set.values()])) for m in ("hit_rate", "mrr")}
    return sorted(results, key=lambda r: key(r, list(r["sets"])), reverse=True)


def folds(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each set left out in turn (`results` in `ranked` order): the rank of the point the other
    sets choose, its figures on the set left out and that set's figures at the point chosen on
    every set. Empty for a single set."""
    names = list(results[0]["sets"])
    if len(names) < 2:
        return {}
    out = {}
    for name in names:
        others = [n for n in names if n != name]
        rank = max(range(len(results)), key=lambda i: key(results[i], others))  # the first of equals
        out[name] = {"rank": rank + 1, "point": results[rank]["point"], "left_out": results[rank]["sets"][name],
                     "in_sample": results[0]["sets"][name]}
    return out


def baselines(sets: dict[str, list[Query]], base: Settings) -> dict[str, dict[str, dict[str, float]]]:
    """Each list alone, per set."""
    return {s.name: {name: score(q, base, s.name) for name, q in sets.items()} for s in SIGNALS}


def render(results: list[dict[str, Any]], base_lines: dict[str, Any], grid: dict[str, list[Any]], top: int,
           current: dict[str, Any]) -> str:
    """The grid's best `top` points, the point the macro would choose, the rank of `current`
    (today's values of the grid's axes), and the folds."""
    names = list(results[0]["sets"])
    lines = ["grid: " + "; ".join(f"{k} {v}" for k, v in grid.items()) + f" ({len(results)} points)",
             f"{'rank':<5}{'point':<70}" + "".join(f"{n[:14]:>15}" for n in names)
             + f"{'worst set':>30}{'macro':>15}   (hit@k / MRR)"]

    def row(cells: list[dict[str, float]]) -> str:
        per_set = dict(zip(names, cells))
        name = metrics.worst({n: objective(c) for n, c in per_set.items()})[0]
        macro = {m: float(np.mean([c[m] for c in cells])) for m in ("hit_rate", "mrr")}
        return ("".join(_cell(c) for c in cells) + f"{_cell(per_set[name])} ({name[:14]})".rjust(30) + _cell(macro))

    for mode, per_set in base_lines.items():
        lines.append(f"{'-':<5}{mode + ' only':<70}" + row([per_set[n] for n in names]))
    for i, r in enumerate(results[:top], 1):
        point = ", ".join(f"{k}={v}" for k, v in r["point"].items())
        lines.append(f"{i:<5}{point:<70}" + row([r["sets"][n] for n in names]))
    by_macro = max(range(len(results)), key=lambda i: objective(results[i]["macro"]))
    at = next((i for i, r in enumerate(results) if r["point"] == current), None)
    for title, index in (("by the macro (the former rule)", by_macro), ("today's defaults", at)):
        point = ", ".join(f"{k}={v}" for k, v in (results[index]["point"] if index is not None else current).items())
        shown = (f"rank {index + 1}: " + row([results[index]["sets"][n] for n in names]).strip()
                 if index is not None else "not in the grid")
        lines.append(f"{title} ({point}): {shown}")
    if loo := folds(results):
        lines += ["left out in turn: the point the other sets rank first, scored on the set left out "
                  "(in sample: at rank 1, chosen on every set)",
                  f"{'set':<22}{'point chosen without it':>26}{'left out':>15}{'in sample':>15}"]
        for name, fold in loo.items():
            lines.append(f"{name[:22]:<22}{'rank ' + str(fold['rank']):>26}{_cell(fold['left_out'])}"
                         f"{_cell(fold['in_sample'])}")
        name = metrics.worst({n: objective(f["left_out"]) for n, f in loo.items()})[0]
        lines.append(f"{'worst left out':<22}{name[:26]:>26}{_cell(loo[name]['left_out'])}"
                     f"{_cell(loo[name]['in_sample'])}")
    return "\n".join(lines)


def _cell(figures: dict[str, float]) -> str:
    return f"{figures['hit_rate']:>8.3f}/{figures['mrr']:.3f}"


ANN_PROBE_SCALES = (0.75, 1.5, 3.0)  # IvfTuned.ANN_PROBE_SCALE values compared
ANN_K = 16


def ann_recall(engine: Engine, queries: list[Query], samples: int = 200) -> dict[float, tuple[int, float, float]]:
    """probe scale → (partitions probed, recall@16 of the ANN route against exact numpy search,
    p50 ms) on the set's real embeddings, unfiltered: its questions plus `samples` of its own
    chunks as queries. Empty when the index has no IVF index (fewer rows than DOCSBOT_ANN_MIN_ROWS,
    or a store that routes otherwise)."""
    store = engine.store
    if not isinstance(store, IvfTuned) or not store.has_ann_index():
        return {}
    chunk_ids, matrix = store.chunk_vectors()
    ids = np.array(chunk_ids)
    picked = np.random.default_rng(0).choice(len(ids), min(samples, len(ids)), replace=False)
    vectors = [q.vector for q in queries] + [matrix[i] for i in picked]
    exact = [set(ids[np.argsort(-(matrix @ v))[:ANN_K]]) for v in vectors]
    found = {}
    for scale in ANN_PROBE_SCALES:
        store.ANN_PROBE_SCALE = scale  # this store's routing only (a class default otherwise)
        recalls, times = [], []
        for vector, truth in zip(vectors, exact):
            started = time.perf_counter()
            hits = asyncio.run(store.dense(vector, 127, ANN_K))
            times.append((time.perf_counter() - started) * 1000)
            recalls.append(len(truth & {h.row["chunk_id"] for h in hits}) / ANN_K)
        found[scale] = (store.ann_nprobes(len(ids), len(ids)), float(np.mean(recalls)), float(np.median(times)))
    return found


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval sweep", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--grid", type=json.loads, help='JSON object replacing grid axes, e.g. {"rrf_k": [10, 60]}')
    parser.add_argument("--depth", type=int, default=64, help="hits fetched per list (≥ the largest candidates)")
    parser.add_argument("--top", type=int, default=15, help="grid points printed")
    parser.add_argument("--ann", action="store_true",
                        help="also measure recall@16 of the ANN route against exact search per probe scale")
    parser.add_argument("--json", action="store_true")
    return parser


def gather(args: argparse.Namespace, base: Settings) -> tuple[dict[str, list[Query]], dict[str, Any]]:
    """Each set's cached queries, and with --ann its ANN recall per probe scale."""
    embedder = make_embedder(rag_config(base))
    chosen = choose(args.docs, args.golden, args.suite, args.set)
    found, ann = {}, {}
    for eval_set in chosen:
        if not eval_set.tune:
            print(f'{eval_set.name}: left out ("tune": false)', file=sys.stderr)
            continue
        settings = eval_set.settings(base, len(chosen) > 1)
        engine = open_engine(settings, embedder)
        cases = load_golden(list(eval_set.golden))
        prepare(engine, settings, eval_set, cases, sys.stderr)
        found[eval_set.name] = run_closing(engine, collect(engine, cases, args.depth))
        if args.ann:
            ann[eval_set.name] = ann_recall(engine, found[eval_set.name])
    return found, ann


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv[1:])
    base = Settings()
    grid = GRID | (args.grid or {})
    try:
        sets, ann = gather(args, base.model_copy(update={"candidates": args.depth}))
    except (*ACTIONABLE, GoldenError, StoreError, EmbeddingError, ValueError) as exc:
        print(f"eval: error: {exc}", file=sys.stderr)
        return 2
    results = sweep(sets, base, grid)
    base_lines = baselines(sets, base)
    if args.json:
        print(json.dumps({"grid": grid, "baselines": base_lines, "results": results, "folds": folds(results),
                          "ann": ann}, indent=2))
        return 0
    print(render(results, base_lines, grid, args.top, current(base, grid)))
    for name, figures in ann.items():
        print(f"{name}: ANN recall@{ANN_K} against exact search (p50 ms): " + (", ".join(
            f"probe scale {scale} ({n} partitions): {r:.3f} ({ms:.1f})" for scale, (n, r, ms) in figures.items())
            or "no ANN index (a flat scan is exact)"))
    return 0
