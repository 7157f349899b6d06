"""Defaults judged by leaving sets out (`eval sweep`, `eval calibrate`): on small synthetic per-set
tables, a default that wins the in-sample macro only because one set carries it loses to one
whose worst set (or worst left-out set) holds up."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from eval import calibrate, metrics, sweep
from eval.golden import GoldenError
from eval.sets import load_suite


def figures(hit_rate: float, mrr: float) -> dict[str, float]:
    return {"hit_rate": hit_rate, "mrr": mrr}


def test_the_worst_left_out_figure_ranks_first_and_the_macro_breaks_ties() -> None:
    assert metrics.worst({"x": 0.9, "y": 0.4, "z": 0.7}) == ("y", 0.4)
    tables = {"tuned to x": ({"x": 1.0, "y": 0.5}, 0.75), "even": ({"x": 0.7, "y": 0.6}, 0.65),
              "even, better macro": ({"x": 0.8, "y": 0.6}, 0.7)}
    by_macro = max(tables, key=lambda k: tables[k][1])
    by_worst = max(tables, key=lambda k: metrics.left_out_key(*tables[k]))
    assert (by_macro, by_worst) == ("tuned to x", "even, better macro")


def grid() -> list[dict]:
    """Point 1 is perfect on x and y and poor on z (best macro); point 2 is good everywhere."""
    return [
        {"point": {"rrf_k": 10}, "sets": {"x": figures(1.0, 1.0), "y": figures(1.0, 1.0), "z": figures(0.6, 0.4)}},
        {"point": {"rrf_k": 30}, "sets": {"x": figures(0.9, 0.8), "y": figures(0.9, 0.8), "z": figures(0.8, 0.6)}},
    ]


def test_the_sweep_ranks_points_by_their_worst_set_not_their_macro() -> None:
    results = sweep.ranked(grid())
    best_macro = max(results, key=lambda r: r["macro"]["hit_rate"] + r["macro"]["mrr"])
    assert best_macro["point"] == {"rrf_k": 10}
    assert [r["point"]["rrf_k"] for r in results] == [30, 10]
    assert results[0]["worst"] == {"set": "z"} | figures(0.8, 0.6)
    assert results[0]["macro"]["hit_rate"] == pytest.approx((0.9 + 0.9 + 0.8) / 3)


def test_each_set_left_out_is_scored_at_the_point_the_others_choose() -> None:
    results = sweep.ranked(grid())
    loo = sweep.folds(results)
    # without z, x and y prefer rrf_k 10 (rank 2 overall), and z pays for it
    assert loo["z"] == {"rank": 2, "point": {"rrf_k": 10},
                        "left_out": figures(0.6, 0.4), "in_sample": figures(0.8, 0.6)}
    # without x, z still takes part and keeps rrf_k 30
    assert loo["x"]["rank"] == 1 and loo["x"]["left_out"] == loo["x"]["in_sample"]
    assert sweep.folds(sweep.ranked([{"point": {}, "sets": {"x": figures(1.0, 1.0)}}])) == {}
    text = sweep.render(results, {}, {"rrf_k": [10, 30]}, 5, {"rrf_k": 30})
    assert "by the macro (the former rule) (rrf_k=10): rank 2" in text
    assert "today's defaults (rrf_k=30): rank 1" in text and "worst left out" in text


def labelled(answerable: list[tuple[float, float]], unanswerable: list[tuple[float, float]]) -> calibrate.Labelled:
    rows = [{"best_cosine": c, "coverage": v} for c, v in [*answerable, *unanswerable]]
    return rows, [True] * len(answerable) + [False] * len(unanswerable)


NAMES = ["best_cosine", "coverage"]
# a and b tell their unanswerable questions by a low cosine; c by a low coverage, at cosines
# that a and b would call unanswerable: a gate fitted without c abstains on all of c
GATE_SETS = {
    "a": labelled([(0.8, 0.9), (0.7, 0.8), (0.75, 0.6), (0.65, 0.9)], [(0.4, 0.8), (0.35, 0.5), (0.5, 0.9)]),
    "b": labelled([(0.85, 0.7), (0.7, 0.9), (0.6, 0.8), (0.72, 0.5)], [(0.45, 0.6), (0.3, 0.9), (0.55, 0.7)]),
    "c": labelled([(0.5, 0.9), (0.45, 0.95), (0.55, 0.85), (0.4, 0.9)], [(0.5, 0.3), (0.45, 0.4), (0.55, 0.2)]),
}


def test_a_set_left_out_is_scored_by_the_gate_fitted_on_the_others() -> None:
    held_out = calibrate.left_out_models(GATE_SETS, NAMES)
    without_c = calibrate.fit_model({n: GATE_SETS[n] for n in ("a", "b")}, NAMES)
    assert held_out["c"] == without_c and held_out["c"] != calibrate.fit_model(GATE_SETS, NAMES)
    assert without_c is not None and without_c.weights["best_cosine"] > without_c.weights["coverage"]
    # a set of one label cannot be fitted alone: leaving out the only other set leaves nothing
    lone = {"a": GATE_SETS["a"], "all answerable": labelled([(0.6, 0.9)], [])}
    assert calibrate.left_out_models(lone, NAMES)["a"] is None


def test_calibrate_chooses_the_threshold_by_the_worst_left_out_set() -> None:
    totals = {n: (sum(labels), len(labels) - sum(labels)) for n, (_, labels) in GATE_SETS.items()}
    model = calibrate.fit_model(GATE_SETS, NAMES)
    assert model is not None
    rows = calibrate.threshold_rows(GATE_SETS, totals, model, calibrate.left_out_models(GATE_SETS, NAMES))
    by_worst, by_macro = calibrate.pick(rows, 0.0)
    assert by_worst is not None and by_macro is not None
    assert by_worst.threshold != by_macro.threshold
    assert by_macro.macro == max(r.macro for r in rows) and by_macro.macro > by_worst.macro
    assert by_worst.worst[1] == max(r.worst[1] for r in rows) > by_macro.worst[1]
    assert by_macro.worst[0] == "c"  # the in-sample choice holds only while c helps fit the gate
    # the figures are the sets' own: the answered rate and recall of their cases at the threshold
    probs = np.array([model.probability(r) for r in GATE_SETS["c"][0]])
    labels = np.array(GATE_SETS["c"][1])
    answered = ((probs >= by_macro.threshold) & labels).sum() / labels.sum()
    assert by_macro.in_sample["c"][0] == pytest.approx(answered)
    floor = calibrate.pick(rows, 0.75)[0]
    assert floor is not None and all(a >= 0.75 for a, _ in [*floor.left_out.values(), *floor.in_sample.values()])
    # today's gate, were it the one fitted on every set at that threshold, shows the in-sample figures
    today = calibrate.render_today(GATE_SETS, totals, replace(model, threshold=by_macro.threshold)).splitlines()
    name, value = metrics.worst({n: calibrate.balanced(f) for n, f in by_macro.in_sample.items()})
    assert f"{value:.3f} ({name})" in today[-1] and today[-1].endswith(f"{by_macro.macro:.3f}")


def test_a_suite_set_can_name_its_files_and_stay_out_of_tuning(tmp_path: Path) -> None:
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"sets": [
        {"name": "rst", "docs": "docs", "golden": "g.jsonl", "include": ["**/*.rst"]},
        {"name": "steps", "docs": "docs", "golden": "g.jsonl", "tune": False},
    ]}))
    rst, steps = load_suite(suite)
    assert rst.include == ("**/*.rst",) and rst.tune and steps.include is None and not steps.tune
    for bad in ({"include": "**/*.rst"}, {"include": ["../x/*.md"]}, {"tune": "no"}):
        suite.write_text(json.dumps({"sets": [{"name": "x", "docs": "docs", "golden": "g.jsonl"} | bad]}))
        with pytest.raises(GoldenError):
            load_suite(suite)


def test_a_set_with_bars_keeps_them_in_sample_whatever_the_left_out_figures_say() -> None:
    totals = {n: (sum(labels), len(labels) - sum(labels)) for n, (_, labels) in GATE_SETS.items()}
    free = calibrate.Fit.of(GATE_SETS, totals, NAMES, calibrate.L2, 0.0, {})
    assert free.by_worst is not None
    a_answered, a_recall = free.by_worst.in_sample["a"]
    assert a_recall is not None and (a_answered, a_recall) != (1.0, 1.0)  # the free choice does not keep a whole
    bars = {"a": (1.0, 1.0, 0.0)}
    kept = calibrate.Fit.of(GATE_SETS, totals, NAMES, calibrate.L2, 0.0, bars)
    keeping = [row for row in kept.rows if not row.misses(bars)]
    assert keeping and kept.by_worst in keeping and kept.by_worst.in_sample["a"] == (1.0, 1.0)
    assert kept.by_worst.worst[1] == max(row.worst[1] for row in keeping) <= free.by_worst.worst[1]
    assert "(misses a's bars)" in calibrate.render(kept.rows, kept.by_worst, kept.by_macro, 0.0, bars)
    # a precision bar: abstaining on a's answerable questions counts against it
    precise = calibrate.Fit.of(GATE_SETS, totals, NAMES, calibrate.L2, 0.0, {"a": (0.0, 0.0, 1.0)})
    assert precise.by_worst is not None and precise.by_worst.in_sample["a"][0] == 1.0
    # bars nobody can keep: nothing is chosen, and the ranking says so
    whole = (1.0, 1.0, 0.0)
    impossible = calibrate.Fit.of(GATE_SETS, totals, NAMES, calibrate.L2, 0.0, {"c": whole, "a": whole})
    assert impossible.by_worst is None and impossible.by_macro is None and impossible.key() < kept.key()
    assert impossible.summary() == "no threshold meets the floor and the bars"


def test_the_ridge_penalty_is_the_one_whose_threshold_holds_up_left_out() -> None:
    totals = {n: (sum(labels), len(labels) - sum(labels)) for n, (_, labels) in GATE_SETS.items()}
    fits = [calibrate.Fit.of(GATE_SETS, totals, NAMES, l2, 0.0, {}) for l2 in (0.01, 100.0)]
    assert fits[0].model != fits[1].model  # the penalty changes the fit
    for fit in fits:  # ranked by the worst left-out figure of the threshold chosen, then the macro
        assert fit.by_worst is not None
        assert fit.key() == (fit.by_worst.worst[1], fit.by_worst.macro)
    assert "worst left out" in fits[0].summary()


def test_a_sets_bars_come_from_its_thresholds_file(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text("")
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"sets": [{"name": "x", "docs": ".", "golden": ["golden.jsonl"]}]}))
    (eval_set,) = load_suite(suite)
    assert calibrate.set_bars(eval_set) is None
    (tmp_path / "thresholds.json").write_text(json.dumps({"min": {"abstention_recall": 0.9, "hit_rate": 0.8}}))
    assert calibrate.set_bars(eval_set) == (0.0, 0.9, 0.0)
