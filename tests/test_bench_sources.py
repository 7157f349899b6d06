"""`python -m eval bench-sources` end to end on three tiny committed fixtures as sources (not
../shared), so the bench cannot rot: it makes the repositories, syncs both layouts and prints
every figure with its ratio. No timing is asserted (the box is shared)."""
from __future__ import annotations

import re

import pytest

from eval import bench_sources
from tests.support.settings import REPO

FIXTURES = REPO / "tests" / "fixtures"


def test_bench_sources_prints_each_figure_and_its_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    trees = [FIXTURES / "runbooks", FIXTURES / "formats" / "httpx", FIXTURES / "formats" / "trpc"]
    code = bench_sources.main(["bench-sources", "--trees", *map(str, trees), "--cold", "--rounds", "1",
                               "--questions", "4"])
    out = capsys.readouterr().out
    assert code in (0, 1)  # 1: a ratio past the goal, which tiny sources may well show
    assert "3 sources (runbooks, httpx, trpc), 15 files" in out
    for figure in ("first sync, embedding included", "first sync, embedding excluded",
                   "one-file change in one source", "no-op sync of all", "question latency p50 over 4 questions"):
        shown = rf"^{re.escape(figure)}.*: one repo [\d.]+ m?s, sources [\d.]+ m?s: [\d.]+x"
        assert re.search(shown, out, re.M), figure
    assert re.search(r"\(\d texts the model embedded in these two\)", out)  # the second pair: (nearly) none
    assert re.search(r"round 1: changed \w+:\S+: one repo [\d.]+ s, sources [\d.]+ s", out)
    assert re.search(r"within 1\.2x: (PASS|FAIL: .+)$", out, re.M)
