"""`python -m eval calibrate`: fit the answerability gate (rag/answerability.py) on several sets
and write its parameter file (default rag/answerability.json, loaded by every engine at start).

Every case of every set is retrieved as `Engine.ask` would (at its level, follow-ups made
standalone); its features are labelled answerable or not. A logistic regression on standardised
features is fitted on the sets that hold both labels, each set weighing the same (and, within a
set, both labels weighing the same), so a set with many cases does not decide alone; a set with
one label only helps choose the threshold (see fit_weights). Sets marked `"tune": false` in the
suite (the procedure sets) are left out.

A set's figure at a threshold is its balanced accuracy: the mean of its answered rate and its
abstention recall (the answered rate alone for a set without unanswerable questions). The
threshold is chosen by leaving sets out: the weights are fitted again on every set but one and
the one left out is scored by that gate, in turn; the threshold whose worst left-out figure is
the highest wins (ties: the better in-sample macro). The in-sample macro (every set scored by the
gate fitted on all of them: the former rule) is printed beside it, with the threshold it would
choose; a threshold that only looks good in sample is one the fit tuned to a set. A set whose
thresholds file (eval/thresholds.json beside docs-sync's golden file) sets an answered rate or an
abstention recall keeps them in sample: a threshold that misses them is not chosen. The fit is
repeated at each ridge penalty of L2S and the penalty whose chosen threshold has the best worst
left-out figure is kept. The file written holds the weights fitted on every set and that
threshold. `--min-answered` demands a floor on every set's answered rate, in sample and left
out; `--dry-run` prints and writes nothing.
"""
from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from foundation.errors import ACTIONABLE
from foundation.settings import Settings
from foundation.wiring import rag_config
from eval import metrics
from eval.golden import GoldenError, load_golden, load_thresholds, thresholds_path
from eval.runner import add_set_options
from eval.sets import EvalSet, choose, open_engine, prepare, run_closing
from rag import EmbeddingError, Engine, StoreError, answerability, make_embedder

# Ridge penalties on the standardised weights tried by `main`, which keeps the one whose chosen
# threshold has the best worst left-out figure: few negatives per set, so the model is kept smooth,
# and how smooth is judged left out like the threshold (on the eight dev sets, 1.0 and 3.0 tie free,
# but only 3.0 keeps the sample set's bars at a threshold as good left out).
L2S = (0.3, 1.0, 3.0, 10.0)
L2 = 1.0
THRESHOLDS = tuple(float(t) for t in np.round(np.arange(0.05, 0.96, 0.025), 3))
Labelled = tuple[list[dict[str, float]], list[bool]]  # a set's gate features, with their labels
Figures = tuple[float, float | None]  # a set's answered rate and abstention recall (None: no negatives)
# Per set, the answered rate, abstention recall and abstention precision it must keep.
Bars = dict[str, tuple[float, float, float]]


async def labelled(engine: Engine, cases: list) -> Labelled:
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


def fit_model(data: dict[str, Labelled], names: list[str], l2: float = L2) -> answerability.Model | None:
    """The gate fitted on these sets (threshold 0); None when no set holds both labels."""
    x = np.array([[row[f] for f in names] for rows, _ in data.values() for row in rows]).reshape(-1, len(names))
    y = np.array([label for _, labels in data.values() for label in labels], dtype=float)
    weights = fit_weights([labels for _, labels in data.values()])
    if not weights.any():
        return None
    means, std = x.mean(axis=0), x.std(axis=0)
    scales = np.where(std < 1e-4, 1.0, std)  # a feature constant on these sets carries no signal
    coef, bias = fit((x - means) / scales, y, weights, l2)
    return answerability.Model(dict(zip(names, coef.round(4).tolist())), dict(zip(names, means.round(4).tolist())),
                               dict(zip(names, scales.round(4).tolist())), round(float(bias), 4), 0.0)


def left_out_models(data: dict[str, Labelled], names: list[str],
                    l2: float = L2) -> dict[str, answerability.Model | None]:
    """Per set, the gate fitted on every other set (None: no other set holds both labels)."""
    return {name: fit_model({n: d for n, d in data.items() if n != name}, names, l2) for name in data}


def figures_at(probs: np.ndarray, labels: np.ndarray, totals: tuple[int, int], threshold: float) -> Figures:
    """(answered rate, abstention recall) of one set at a threshold; cases that never reached the
    gate count as abstentions (as in `eval run`)."""
    answerable, unanswerable = totals
    answered = int(((probs >= threshold) & labels).sum())
    abstained_neg = unanswerable - int(((probs >= threshold) & ~labels).sum())
    return (answered / answerable if answerable else 1.0, abstained_neg / unanswerable if unanswerable else None)


def balanced(figures: Figures) -> float:
    answered, recall = figures
    return (answered + recall) / 2 if recall is not None else answered


@dataclass(frozen=True)
class Row:
    """One threshold: each set scored by the gate fitted on every set (in sample) and, for the
    sets that can be left out, by the gate fitted on the others."""

    threshold: float
    in_sample: dict[str, Figures]
    left_out: dict[str, Figures]
    totals: dict[str, tuple[int, int]] = field(default_factory=dict)  # per set: answerable, unanswerable

    @property
    def macro(self) -> float:
        return float(np.mean([balanced(f) for f in self.in_sample.values()]))

    @property
    def worst(self) -> tuple[str, float]:
        """The left-out set with the lowest balanced accuracy, and that figure."""
        return metrics.worst({n: balanced(f) for n, f in self.left_out.items()})

    def meets(self, min_answered: float, bars: Bars | None = None) -> bool:
        """Every set answers at least `min_answered` (in sample and left out), and each set with
        bars meets them in sample."""
        return (all(a >= min_answered for a, _ in [*self.in_sample.values(), *self.left_out.values()])
                and not self.misses(bars or {}))

    def misses(self, bars: Bars) -> list[str]:
        """The sets whose bars (their thresholds file's answered rate, abstention recall and
        precision) this threshold misses in sample."""
        missed = []
        for name, (min_answered, min_recall, min_precision) in bars.items():
            if name not in self.in_sample:
                continue
            answered, recall = self.in_sample[name]
            answerable, unanswerable = self.totals.get(name, (0, 0))
            declined = (1 - answered) * answerable + (recall or 0.0) * unanswerable
            precision = (recall or 0.0) * unanswerable / declined if declined else None
            if (answered < min_answered or (recall is not None and recall < min_recall)
                    or (precision is not None and precision < min_precision)):
                missed.append(name)
        return missed


def threshold_rows(data: dict[str, Labelled], totals: dict[str, tuple[int, int]], model: answerability.Model,
                   held_out: dict[str, answerability.Model | None],
                   thresholds: tuple[float, ...] = THRESHOLDS) -> list[Row]:
    """Every threshold's row: `model` fitted on every set, `held_out` each set's gate fitted without it."""
    labels = {name: np.array(lab, dtype=bool) for name, (_, lab) in data.items()}
    inside = {name: np.array([model.probability(r) for r in rows]) for name, (rows, _) in data.items()}
    outside = {name: np.array([gate.probability(r) for r in data[name][0]])
               for name, gate in held_out.items() if gate is not None}
    return [Row(t, {n: figures_at(p, labels[n], totals[n], t) for n, p in inside.items()},
                {n: figures_at(p, labels[n], totals[n], t) for n, p in outside.items()}, totals) for t in thresholds]


def pick(rows: list[Row], min_answered: float, bars: Bars | None = None) -> tuple[Row | None, Row | None]:
    """Among the rows that meet the floor and the sets' bars: the one chosen by the worst left-out
    figure (None when no set could be left out) and the one the in-sample macro would choose."""
    ok = [row for row in rows if row.meets(min_answered, bars)]
    by_worst = max((row for row in ok if row.left_out), default=None, key=lambda row: metrics.left_out_key(
        {n: balanced(f) for n, f in row.left_out.items()}, row.macro))
    return by_worst, max(ok, key=lambda row: row.macro, default=None)


def render(rows: list[Row], by_worst: Row | None, by_macro: Row | None, min_answered: float,
           bars: Bars | None = None) -> str:
    names = list(rows[0].in_sample)
    left = list(rows[0].left_out)
    lines = [f"{'threshold':<10}" + "".join(f"{n[:14]:>15}" for n in left) + f"{'worst left out':>26}"
             + f"{'in-sample macro bal.acc':>25}   (left out: answered / abstention recall; worst: balanced accuracy)"]
    for row in rows:
        cells = "".join(f"{a:>9.3f}/{'  n/a' if r is None else f'{r:.3f}'}" for a, r in row.left_out.values())
        worst = f"{row.worst[1]:.3f} ({row.worst[0][:14]})" if row.left_out else "n/a"
        lines.append(f"{row.threshold:<10.3f}{cells}{worst:>26}{row.macro:>25.3f}"
                     + ("" if row.meets(min_answered) else "   (answers too few)")
                     + "".join(f"   (misses {name}'s bars)" for name in row.misses(bars or {})))
    if not left:
        lines.append("no set can be left out (no other set holds both labels): the in-sample macro chooses")
    chosen = [("chosen by the worst left-out figure", by_worst)]
    if by_macro is not by_worst:
        chosen.append(("by the in-sample macro", by_macro))
    for title, picked in chosen:
        if picked is None:
            continue
        lines.append(f"{title}: threshold {picked.threshold}")
        lines.append(f"  {'answered / recall / bal.acc':<22}{'left out':>26}{'in sample':>26}")
        for name in names:
            out = picked.left_out.get(name)
            lines.append(f"  {name[:22]:<22}{_figures(out) if out else 'cannot be left out':>26}"
                         f"{_figures(picked.in_sample[name]):>26}")
        worst = f"{picked.worst[1]:.3f} ({picked.worst[0]})" if picked.left_out else "n/a"
        lines.append(f"  {'worst left out / macro':<22}{worst:>26}{picked.macro:>26.3f}")
    if by_worst is not None and by_macro is by_worst:
        lines.append(f"the in-sample macro chooses the same threshold, {by_worst.threshold}")
    return "\n".join(lines)


def render_today(data: dict[str, Labelled], totals: dict[str, tuple[int, int]], gate: answerability.Model) -> str:
    """Each set at the gate engines load today (its weights and threshold, as they were fitted),
    for comparison with the threshold chosen above."""
    figures = {name: figures_at(np.array([gate.probability(r) for r in rows]), np.array(labels, dtype=bool),
                                totals[name], gate.threshold) for name, (rows, labels) in data.items()}
    name, value = metrics.worst({n: balanced(f) for n, f in figures.items()})
    return "\n".join([f"today's gate (threshold {gate.threshold}, weights as fitted)",
                      *(f"  {n[:22]:<22}{_figures(f):>26}" for n, f in figures.items()),
                      f"  {'worst / macro':<22}{f'{value:.3f} ({name})':>26}"
                      f"{np.mean([balanced(f) for f in figures.values()]):>26.3f}"])


def _figures(figures: Figures) -> str:
    answered, recall = figures
    return f"{answered:.3f} / {'n/a' if recall is None else f'{recall:.3f}'} / {balanced(figures):.3f}"


def _weights(model: answerability.Model) -> str:
    return ", ".join(f"{f} {c:+.2f}" for f, c in model.weights.items()) + f"; bias {model.bias:+.2f}"


GATED = ("answered_rate", "abstention_recall", "abstention_precision")  # the bars the threshold moves


def set_bars(eval_set: EvalSet) -> tuple[float, float, float] | None:
    """The answered rate, abstention recall and precision a set's thresholds file demands (None:
    none of them)."""
    source = eval_set.thresholds or (thresholds_path(eval_set.golden[0]) if eval_set.golden else None)
    minimum = load_thresholds(source).minimum if source else {}
    if not any(name in minimum for name in GATED):
        return None
    answered, recall, precision = (minimum.get(name, 0.0) for name in GATED)
    return answered, recall, precision


@dataclass(frozen=True)
class Fit:
    """The gate fitted at one ridge penalty: on every set, and on every set but each one."""

    l2: float
    model: answerability.Model | None
    held_out: dict[str, answerability.Model | None]
    rows: list[Row]
    by_worst: Row | None
    by_macro: Row | None

    @classmethod
    def of(cls, data: dict[str, Labelled], totals: dict[str, tuple[int, int]], names: list[str], l2: float,
           min_answered: float, bars: Bars) -> "Fit":
        model = fit_model(data, names, l2)
        if model is None:
            return cls(l2, None, {}, [], None, None)
        held_out = left_out_models(data, names, l2)
        rows = threshold_rows(data, totals, model, held_out)
        return cls(l2, model, held_out, rows, *pick(rows, min_answered, bars))

    def key(self) -> tuple[float, float]:
        """Fits rank like thresholds: by the worst left-out figure of their chosen threshold."""
        row = self.by_worst
        if row is None:  # no set can be left out: the in-sample macro decides
            return -1.0, self.by_macro.macro if self.by_macro else -1.0
        return metrics.left_out_key({n: balanced(f) for n, f in row.left_out.items()}, row.macro)

    def summary(self) -> str:
        row = self.by_worst
        if row is None:
            return "no threshold meets the floor and the bars" if self.by_macro is None else "no set can be left out"
        return (f"threshold {row.threshold}, worst left out {row.worst[1]:.3f} ({row.worst[0]}), "
                f"in-sample macro {row.macro:.3f}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m eval calibrate", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_set_options(parser)
    parser.add_argument("--min-answered", type=float, default=0.0,
                        help="share of answerable questions every set must still answer (default: no floor)")
    parser.add_argument("--features", default=",".join(answerability.FEATURES),
                        help="comma-separated features to fit (default: all of rag/answerability.py)")
    parser.add_argument("--out", type=Path, default=answerability.DEFAULT_FILE, help="parameter file to write")
    parser.add_argument("--dry-run", action="store_true", help="print the tables; write no parameter file")
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv[1:])
    base = Settings()
    try:
        embedder = make_embedder(rag_config(base))
        today = answerability.load(rag_config(base).answer.answerability_file)
        chosen = choose(args.docs, args.golden, args.suite, args.set)
        data: dict[str, Labelled] = {}
        totals: dict[str, tuple[int, int]] = {}
        bars: Bars = {}
        for eval_set in chosen:
            if not eval_set.tune:
                print(f'{eval_set.name}: left out ("tune": false)', file=sys.stderr)
                continue
            settings = eval_set.settings(base, len(chosen) > 1)
            engine = open_engine(settings, embedder, answerability.NEUTRAL)
            cases = load_golden(list(eval_set.golden))
            prepare(engine, settings, eval_set, cases, sys.stderr)
            data[eval_set.name] = run_closing(engine, labelled(engine, cases))
            totals[eval_set.name] = (sum(c.answerable for c in cases), sum(not c.answerable for c in cases))
            if kept := set_bars(eval_set):
                bars[eval_set.name] = kept
    except (*ACTIONABLE, GoldenError, StoreError, EmbeddingError, answerability.AnswerabilityError, ValueError) as exc:
        print(f"eval: error: {exc}", file=sys.stderr)
        return 2
    names = [f for f in args.features.split(",") if f]
    if unknown := set(names) - set(answerability.FEATURES):
        print(f"eval: error: unknown features {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    fits = [Fit.of(data, totals, names, l2, args.min_answered, bars) for l2 in L2S]
    if fits[0].model is None:
        print("eval: error: no set has both answerable and unanswerable questions that reach the gate: "
              "nothing to fit on", file=sys.stderr)
        return 2
    for candidate in fits:
        print(f"ridge penalty {candidate.l2}: {candidate.summary()}")
    chosen_fit = max(fits, key=Fit.key)
    model, by_worst, by_macro = chosen_fit.model, chosen_fit.by_worst, chosen_fit.by_macro
    assert model is not None
    print(f"chosen ridge penalty {chosen_fit.l2}; weights (standardised) fitted on every set: " + _weights(model))
    for name, gate in chosen_fit.held_out.items():
        print(f"  without {name}: " + (_weights(gate) if gate else "none (no other set holds both labels)"))
    print(render(chosen_fit.rows, by_worst, by_macro, args.min_answered, bars))
    print(render_today(data, totals, today))
    best = by_worst or by_macro
    if best is None:
        also = f" and keeps the bars of {', '.join(bars)}" if bars else ""
        print(f"no threshold answers {args.min_answered:.0%} of every set{also}; nothing written", file=sys.stderr)
        return 1
    how = (f"worst left-out balanced accuracy {best.worst[1]:.3f} ({best.worst[0]}), in-sample macro {best.macro:.3f}"
           if best is by_worst else f"in-sample macro balanced accuracy {best.macro:.3f} (no set could be left out)")
    if args.dry_run:
        print(f"threshold {best.threshold}: {how}; nothing written (--dry-run)")
        return 0
    model = answerability.Model(model.weights, model.means, model.scales, model.bias, best.threshold)
    note = (f"Written by `python -m eval calibrate` (min answered {args.min_answered}, ridge penalty {chosen_fit.l2}, "
            f"keeping the bars of {', '.join(bars) or 'no set'}): weights fitted on every set, "
            f"threshold {best.threshold} by leaving each set out: {how}.")
    args.out.write_text(json.dumps(model.to_json(note, list(data)), indent=2) + "\n", encoding="utf-8")
    print(f"threshold {best.threshold}: {how}; wrote {args.out}")
    return 0
