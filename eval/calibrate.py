"""`python -m eval calibrate`: fit the answerability gate (rag/answerability.py) on several sets
and write its parameter file (default rag/answerability.json, loaded by every engine at start).

Every case of every set is retrieved as `Engine.ask` would (at its level, follow-ups made
standalone); its features are labelled answerable or not. A logistic regression on standardised
features is fitted on the sets that hold both labels, each set weighing the same (and, within a
set, both labels weighing the same), so a set with many cases does not decide alone; a set with
one label only helps choose the threshold (see fit_weights). The threshold is then the one with the
best macro balanced accuracy: per set, the mean of its answered rate and its abstention recall
(the answered rate alone for a set without unanswerable questions), averaged over the sets;
`--min-answered` can demand a floor on every set's answered rate. The thresholds tried are
printed with each set's figures.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import numpy as np

from docsbot.errors import ACTIONABLE
from docsbot.settings import Settings
from docsbot.wiring import rag_config
from eval.golden import GoldenError, load_golden
from eval.runner import add_set_options
from eval.sets import choose, open_engine, prepare
from rag import EmbeddingError, Engine, StoreError, answerability, make_embedder

L2 = 1.0  # ridge penalty on the standardised weights: few negatives, keep the model smooth


async def labelled(engine: Engine, cases: list) -> tuple[list[dict[str, float]], list[bool]]:
    """Features of the cases that reach the gate (others abstain before it), with their labels."""
    rows, labels = [], []
    for case in cases:
        retrieval, _, _ = await engine.search(case.question, case.level, list(case.history))
        if not retrieval.passed:
            continue
        rows.append(answerability.features(case.question, retrieval))
        labels.append(case.answerable)
    return rows, labels


def fit(x: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float = L2, steps: int = 50) -> tuple[np.ndarray, float]:
    """Weighted, ridge-penalised logistic regression by Newton's method (x standardised)."""
    coef, bias = np.zeros(x.shape[1]), 0.0
    xb = np.hstack([x, np.ones((len(x), 1))])
    for _ in range(steps):
        p = 1 / (1 + np.exp(-(xb @ np.append(coef, bias))))
        penalty = np.append(np.full(x.shape[1], l2), 0.0)
        grad = xb.T @ (w * (p - y)) + penalty * np.append(coef, 0.0)
        hess = (xb * (w * p * (1 - p))[:, None]).T @ xb + np.diag(penalty) + 1e-9 * np.eye(xb.shape[1])
        step = np.linalg.solve(hess, grad)
        coef, bias = coef - step[:-1], bias - step[-1]
        if np.abs(step).max() < 1e-8:
            break
    return coef, bias


def fit_weights(labels_per_set: list[list[bool]]) -> np.ndarray:
    """Each case's weight in the fit: every set with both labels weighs the same, split evenly
    between its two labels. A set with one label only (awsdocs-dev: all answerable) weighs 0: its
    questions differ from the other sets' unanswerable ones by corpus (how high cosines run
    there) more than by answerability, and fitting on that contrast tuned the gate to the
    corpora. Such a set still takes part in choosing the threshold."""
    weights: list[float] = []
    for labels in labels_per_set:
        n_pos, n_neg = sum(labels), len(labels) - sum(labels)
        weights += [1 / (2 * (n_pos if label else n_neg)) if n_pos and n_neg else 0.0 for label in labels]
    total = sum(weights)
    return np.array(weights) * len(weights) / total if total else np.zeros(len(weights))


def per_set_figures(probs: dict[str, np.ndarray], labels: dict[str, np.ndarray], totals: dict[str, tuple[int, int]],
                    threshold: float) -> dict[str, tuple[float, float | None]]:
    """(answered rate, abstention recall) per set at a threshold; cases that never reached the
    gate count as abstentions (as in `eval run`)."""
    figures = {}
    for name, p in probs.items():
        answerable, unanswerable = totals[name]
        y = labels[name]
        answered = int(((p >= threshold) & y).sum())
        abstained_neg = unanswerable - int(((p >= threshold) & ~y).sum())
        figures[name] = (answered / answerable if answerable else 1.0,
                         abstained_neg / unanswerable if unanswerable else None)
    return figures


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval calibrate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--min-answered", type=float, default=0.0,
                        help="share of answerable questions every set must still answer (default: no floor)")
    parser.add_argument("--features", default=",".join(answerability.FEATURES),
                        help="comma-separated features to fit (default: all of rag/answerability.py)")
    parser.add_argument("--out", type=Path, default=answerability.DEFAULT_FILE, help="parameter file to write")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv[1:])
    base = Settings()
    try:
        embedder = make_embedder(rag_config(base))
        chosen = choose(args.docs, args.golden, args.suite)
        data: dict[str, tuple[list[dict[str, float]], list[bool]]] = {}
        totals: dict[str, tuple[int, int]] = {}
        for eval_set in chosen:
            settings = eval_set.settings(base, len(chosen) > 1)
            engine = open_engine(settings, embedder, answerability.NEUTRAL)
            cases = load_golden(list(eval_set.golden))
            prepare(engine, settings, eval_set, cases, sys.stderr)
            data[eval_set.name] = asyncio.run(labelled(engine, cases))
            totals[eval_set.name] = (sum(c.answerable for c in cases), sum(not c.answerable for c in cases))
    except (*ACTIONABLE, GoldenError, StoreError, EmbeddingError, answerability.AnswerabilityError, ValueError) as exc:
        print(f"eval: error: {exc}", file=sys.stderr)
        return 2
    names = [f for f in args.features.split(",") if f]
    if unknown := set(names) - set(answerability.FEATURES):
        print(f"eval: error: unknown features {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    x = np.array([[row[f] for f in names] for rows, _ in data.values() for row in rows])
    y = np.array([label for _, labels in data.values() for label in labels], dtype=float)
    weights = fit_weights([labels for _, labels in data.values()])
    if not weights.any():
        print("eval: error: no set has both answerable and unanswerable questions that reach the gate: "
              "nothing to fit on", file=sys.stderr)
        return 2
    means, std = x.mean(axis=0), x.std(axis=0)
    scales = np.where(std < 1e-4, 1.0, std)  # a feature constant on these sets carries no signal
    coef, bias = fit((x - means) / scales, y, weights)
    model = answerability.Model(dict(zip(names, coef.round(4).tolist())), dict(zip(names, means.round(4).tolist())),
                                dict(zip(names, scales.round(4).tolist())), round(float(bias), 4), 0.0)
    probs = {name: np.array([model.probability(r) for r in rows]) for name, (rows, _) in data.items()}
    labels = {name: np.array(lab, dtype=bool) for name, (_, lab) in data.items()}
    print("weights (standardised): " + ", ".join(f"{f} {c:+.2f}" for f, c in zip(names, coef)) + f"; bias {bias:+.2f}")
    print(f"{'threshold':<10}" + "".join(f"{n[:14]:>16}" for n in data)
          + f"{'macro bal.acc':>14}   (answered / abstention recall)")
    best: tuple[float, float] | None = None
    for threshold in np.round(np.arange(0.05, 0.96, 0.025), 3):
        figures = per_set_figures(probs, labels, totals, float(threshold))
        macro = float(np.mean([(a + r) / 2 if r is not None else a for a, r in figures.values()]))
        ok = all(a >= args.min_answered for a, _ in figures.values())
        print(f"{threshold:<10.3f}"
              + "".join(f"{a:>8.3f} / {r if r is not None else float('nan'):.3f}" for a, r in figures.values())
              + f"{macro:>14.3f}" + ("" if ok else "   (answers too few)"))
        if ok and (best is None or macro > best[1]):
            best = (float(threshold), macro)
    if best is None:
        print(f"no threshold answers {args.min_answered:.0%} of every set; nothing written", file=sys.stderr)
        return 1
    model = answerability.Model(model.weights, model.means, model.scales, model.bias, best[0])
    note = (f"Written by `python -m eval calibrate` (min answered {args.min_answered}); threshold {best[0]} "
            f"gives macro balanced accuracy {best[1]:.3f} on the sets it was fitted on.")
    args.out.write_text(json.dumps(model.to_json(note, list(data)), indent=2) + "\n", encoding="utf-8")
    print(f"threshold {best[0]}: macro balanced accuracy {best[1]:.3f}; wrote {args.out}")
    return 0
