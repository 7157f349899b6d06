"""The golden-set evaluation: metric functions on hand-made rankings, golden/threshold parsing,
and `python -m eval run` end to end on a tiny corpus (real index, real model)."""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from foundation.wiring import rag_config
from eval import calibrate, metrics, runner, sweep
from eval.standins.openai_server import OpenAIStandIn
from eval.golden import GoldenCase, GoldenError, Thresholds, default_golden_files, load_golden, parse_case
from rag import answerability
from rag.answer import Answer, Citation, Diagnostics
from rag.embeddings import LocalMiniLM
from rag.followup import REWRITE_PROMPT
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.levels import Level
from rag.store.search import Store
from tests.support.settings import make_settings


def test_ranking_is_documents_in_first_appearance_order() -> None:
    ranking = metrics.doc_ranking(["b.md", "a.md", "b.md", "c.md"])
    assert ranking == ["b.md", "a.md", "c.md"]
    assert metrics.first_gold_rank(ranking, ["c.md", "x.md"]) == 3
    assert metrics.first_gold_rank(ranking, ["x.md"]) is None


def test_hit_rate_and_mrr_by_hand() -> None:
    ranks = [1, 3, None]
    assert metrics.hit_rate(ranks) == pytest.approx(2 / 3)
    assert metrics.mrr(ranks) == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert metrics.hit_rate([]) is None and metrics.mrr([]) is None


def test_recall_and_ndcg_by_hand() -> None:
    ranking = ["x.md", "a.md", "y.md", "b.md"]
    gold = ["a.md", "b.md", "c.md"]
    assert metrics.recall(ranking, gold) == pytest.approx(2 / 3)
    dcg = 1 / math.log2(3) + 1 / math.log2(5)
    ideal = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    assert metrics.ndcg(ranking, gold, 10) == pytest.approx(dcg / ideal)
    assert metrics.ndcg(ranking, gold, 1) == 0.0
    assert metrics.ndcg(["a.md"], ["a.md"]) == 1.0


def test_abstention_precision_and_recall() -> None:
    # predicted abstain vs actually unanswerable: 2 true positives, 1 false positive, 1 missed
    predicted = [True, True, True, False, False]
    actual = [True, True, False, True, False]
    assert metrics.precision_recall(predicted, actual) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert metrics.precision_recall([False, False], [False, False]) == (None, None)


def test_nearest_rank_percentile() -> None:
    values = [float(v) for v in range(1, 21)]  # 1..20
    assert metrics.percentile(values, 50) == 10.0
    assert metrics.percentile(values, 95) == 19.0
    assert metrics.percentile([7.0], 95) == 7.0
    assert metrics.percentile([], 50) is None


def test_token_f1_ignores_case_punctuation_articles_and_citation_marks() -> None:
    assert metrics.token_f1("The limit is 100 characters. [1]", "100 characters") == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert metrics.token_f1("Every 30 minutes [2][3]", "every 30 minutes.") == 1.0
    assert metrics.token_f1("no overlap", "something else") == 0.0


# -- golden files and thresholds -----------------------------------------------------------------


def test_default_golden_files_include_promoted_feedback(tmp_path: Path) -> None:
    for name in ("golden_feedback.jsonl", "golden.jsonl", "other.jsonl"):
        (tmp_path / name).write_text("")
    assert [p.name for p in default_golden_files(tmp_path)] == ["golden.jsonl", "golden_feedback.jsonl"]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "not valid JSON"),
        ('{"id": "a", "question": "q", "gold_doc_ids": [], "answerable": true}', "at least one gold doc"),
        ('{"id": "a", "question": "q", "gold_doc_ids": ["x.md"], "answerable": "yes"}', "'answerable'"),
        ('{"id": "a", "question": "q", "gold_doc_ids": [], "answerable": false, "level": "boss"}',
         "unknown access level"),
        ('{"id": "a", "question": "q", "gold_doc_ids": ["x.md"], "answerable": true, "expect_reason": "no_match"}',
         "only for unanswerable"),
        ('{"id": "a", "question": "q", "gold_doc_ids": [], "answerable": false, "history": [{"speaker": "bot"}]}',
         "'history'"),
    ],
)
def test_bad_golden_lines_name_file_line_and_problem(tmp_path: Path, line: str, message: str) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text('{"id": "ok", "question": "q", "gold_doc_ids": [], "answerable": false}\n' + line + "\n")
    with pytest.raises(GoldenError, match=message) as caught:
        load_golden([path])
    assert f"{path}:2" in str(caught.value)


def test_golden_defaults_and_unknown_keys(tmp_path: Path) -> None:
    path = tmp_path / "golden.jsonl"
    path.write_text(json.dumps({"id": "a", "question": "q?", "gold_doc_ids": ["d.md"], "answerable": True,
                                "gold_yes_no": "Yes", "history": [{"speaker": "user", "text": "hi"}]}))
    (case,) = load_golden([path])
    assert case.level is Level.restricted
    assert case.history == (("user", "hi"),)
    with pytest.raises(GoldenError, match="duplicate id 'a'"):
        load_golden([path, path])


def test_threshold_misses() -> None:
    thresholds = Thresholds({"hit_rate": 0.9, "abstention_recall": 0.9, "typo": 1}, {"leaks": 0})
    misses = thresholds.misses({"hit_rate": 0.85, "abstention_recall": None, "leaks": 1})
    assert misses == [
        "hit_rate 0.85 < 0.9",
        "abstention_recall was not measured (threshold 0.9)",
        "typo is not a metric of the report",
        "leaks 1 > 0",
    ]
    assert thresholds.misses({"hit_rate": 0.9, "abstention_recall": 1.0, "typo": 1, "leaks": 0}) == []


# -- the runner end to end -----------------------------------------------------------------------

DOCS = {
    "pets.md": ("public", "Office Pets", "Dogs are welcome in the Berlin office on Fridays. Cats stay at home."),
    "payroll.md": ("team", "Payroll", "Salaries are paid on the 25th day of every month by bank transfer."),
    "vault.md": ("restricted", "Vault", "The vault master password is rotated every 90 days with vaultctl rotate."),
}
CASES = [
    {"id": "pets", "question": "are dogs welcome in the office?", "gold_doc_ids": ["pets.md"],
     "answerable": True, "level": "public", "gold_answer": "Dogs are welcome on Fridays."},
    {"id": "salary", "question": "which day of the month are salaries paid?", "gold_doc_ids": ["payroll.md"],
     "answerable": True, "level": "team"},
    {"id": "vault", "question": "how often is the vault master password rotated?", "gold_doc_ids": ["vault.md"],
     "answerable": True},
    {"id": "vault-public", "question": "how often is the vault master password rotated?",
     "gold_doc_ids": ["vault.md"], "answerable": False, "level": "public", "expect_reason": "no_access"},
    {"id": "volcano", "question": "when did the Krakatoa volcano last erupt?", "gold_doc_ids": [],
     "answerable": False, "level": "public", "expect_reason": "no_match"},
]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, (access, title, text) in DOCS.items():
        (docs / name).write_text(f"---\ntitle: {title}\naccess: {access}\n---\n\n# {title}\n\n{text}\n")
    golden = tmp_path / "golden.jsonl"
    golden.write_text("\n".join(json.dumps(c) for c in CASES) + "\n")
    (tmp_path / "thresholds.json").write_text(json.dumps(
        {"min": {"hit_rate": 0.9, "abstention_recall": 0.9, "answered_rate": 1.0}, "max": {"leaks": 0}}))
    return tmp_path


@pytest.fixture
def engine(tmp_path: Path, embedder: LocalMiniLM) -> Engine:
    settings = make_settings(tmp_path / "index")
    return Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())


def run_main(argv: list[str], engine: Engine) -> int:
    """`python -m eval run` on `engine` (built by the fixture from default settings)."""
    return runner.main(argv, engine=engine, settings=make_settings(engine.config.index.data_dir))


def run_eval(corpus: Path, engine: Engine, *extra: str) -> int:
    return run_main(["run", "--docs", str(corpus / "docs"), *extra], engine)


def test_run_indexes_scores_and_passes_thresholds(
    corpus: Path, engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_eval(corpus, engine, "--golden", str(corpus / "golden.jsonl"), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert engine.store.counts()["documents"] == 3
    assert report["k"] == engine.config.retrieval.top_k
    assert (report["hit_rate"], report["mrr"], report["recall"], report["ndcg@10"]) == (1.0, 1.0, 1.0, 1.0)
    assert report["abstention_recall"] == 1.0 and report["abstention_precision"] == 1.0
    assert report["answered_rate"] == 1.0 and report["leaks"] == 0
    assert report["citation_validity"] == 1.0 and report["citation_gold_rate"] == 1.0
    assert 0 < report["answer_f1"] <= 1
    assert report["failures"] == []
    assert report["thresholds"] == {"file": str(corpus / "thresholds.json"), "missed": []}
    for stage in ("embed", "retrieve", "generate", "total"):
        assert report["latency_ms"][stage]["p50"] <= report["latency_ms"][stage]["p95"]


def test_run_compare_table_and_threshold_miss_exits_non_zero(
    corpus: Path, engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    # A golden file with its own thresholds, one case whose gold doc is not what is retrieved, and
    # one expecting the wrong abstention reason.
    wrong = [dict(CASES[0], gold_doc_ids=["payroll.md"]), *CASES[1:-1], dict(CASES[-1], expect_reason="no_access")]
    golden = corpus / "wrong.jsonl"
    golden.write_text("\n".join(json.dumps(c) for c in wrong))
    (corpus / "wrong.thresholds.json").write_text(json.dumps({"min": {"hit_rate": 0.9}}))
    assert run_eval(corpus, engine, "--golden", str(golden), "--compare") == 1
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.startswith("metric"))
    assert header.split() == ["metric", "hybrid", "dense", "bm25"]
    hit_row = next(line for line in out.splitlines() if line.startswith("hit rate@4"))
    assert hit_row.split()[2:] == ["0.667", "0.667", "0.667"]
    assert "pets: miss: no gold doc among the hybrid top 4" in out
    assert "volcano: abstained with no_match, expected no_access" in out
    assert f"thresholds ({corpus / 'wrong.thresholds.json'}): MISSED: hit_rate 0.667 < 0.9" in out


def test_run_rejects_bad_input_in_one_line(
    corpus: Path, engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    golden = corpus / "typo.jsonl"
    golden.write_text(json.dumps(dict(CASES[0], gold_doc_ids=["pet.md"])))
    assert run_eval(corpus, engine, "--golden", str(golden)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gold doc ids not found under" in err and "pet.md" in err


def test_leak_and_citation_checks_on_hand_made_answers() -> None:
    case = load_case({"id": "c", "question": "q", "gold_doc_ids": ["a.md"], "answerable": True, "level": "team"})

    def answer(cited_path: str, access: str, n: int = 1) -> Answer:
        citation = Citation(n, cited_path, "T", "", "", "", "", "", 0.5, access=access)
        retrieved = [{"doc_path": "a.md", "access": "team"}]
        return Answer("q", "text [1]", True, None, [citation], Diagnostics(), "team", retrieved=retrieved)

    assert not runner.answer_leaked(case, answer("a.md", "team"))
    assert runner.citations_valid(case, answer("a.md", "team"))
    assert runner.answer_leaked(case, answer("a.md", "restricted"))
    assert not runner.citations_valid(case, answer("a.md", "restricted"))
    assert not runner.citations_valid(case, answer("b.md", "team"))  # not the source it numbers
    assert not runner.citations_valid(case, answer("a.md", "team", n=2))  # no source 2 was given


def load_case(raw: dict) -> GoldenCase:
    return parse_case(json.dumps(raw), "test")


# -- several sets: run, sweep, calibrate -----------------------------------------------------------


def second_corpus(tmp_path: Path) -> Path:
    """The same questions over the same pages under other names (a second set for the macro)."""
    other = tmp_path / "other"
    (other / "docs").mkdir(parents=True)
    for name, (access, title, text) in DOCS.items():
        (other / "docs" / f"x-{name}").write_text(
            f"---\ntitle: {title}\naccess: {access}\n---\n\n# {title}\n\n{text}\n")
    cases = [c | {"gold_doc_ids": [f"x-{p}" for p in c["gold_doc_ids"]]} for c in CASES]
    (other / "golden.jsonl").write_text("\n".join(json.dumps(c) for c in cases) + "\n")
    return other


def test_run_reports_each_set_and_their_macro_average(
    corpus: Path, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = second_corpus(tmp_path)
    argv = ["run", "--docs", str(corpus / "docs"), "--golden", str(corpus / "golden.jsonl"),
            "--docs", str(other / "docs"), "--golden", str(other / "golden.jsonl")]
    assert run_main([*argv, "--json", "--compare"], engine) == 0
    report = json.loads(capsys.readouterr().out)
    first, second = report["sets"].values()
    assert (first["hit_rate"], second["hit_rate"]) == (1.0, 1.0)
    assert first["thresholds"]["missed"] == [] and second["thresholds"]["file"] is None
    assert report["macro"]["mrr"] == pytest.approx((first["mrr"] + second["mrr"]) / 2)
    assert report["macro"]["compare"]["bm25"]["hit_rate"] is not None
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"sets": [
        {"name": "one", "docs": str(corpus / "docs"), "golden": [str(corpus / "golden.jsonl")]},
        {"name": "two", "docs": "other/docs", "golden": "other/golden.jsonl", "default_level": "public"},
    ]}))
    assert run_main(["run", "--suite", str(suite)], engine) == 0
    table = capsys.readouterr().out
    assert re.search(r"hit rate@4\s+1\.000\s+1\.000\s+1\.000", table) and "macro" in table
    assert run_main(["run", "--docs", str(corpus / "docs"), "--docs", str(other / "docs")], engine) == 2
    assert "need as many --golden" in capsys.readouterr().err


def test_run_with_an_llm_endpoint_over_several_sets_and_follow_ups(
    corpus: Path, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An OpenAI-compatible endpoint over two sets whose rows have history: the question rewriter
    runs while the searches are scored, the answers on the next event loop, the second set on
    another (the client once outlived the first loop: "Event loop is closed")."""
    follow_up = {"id": "cats", "question": "and cats?", "gold_doc_ids": ["pets.md"], "answerable": True,
                 "level": "public", "history": [{"speaker": "user", "text": "are dogs welcome in the office?"},
                                                {"speaker": "agent", "text": "Yes, on Fridays [1]."}]}
    (corpus / "golden.jsonl").write_text(json.dumps(CASES[0]) + "\n" + json.dumps(follow_up) + "\n")
    other = second_corpus(tmp_path)
    model = OpenAIStandIn().start()
    try:
        model.reply = lambda messages: ("Dogs are welcome on Fridays [1]." if "<source" in messages[-1]["content"]
                                        else "are cats welcome in the office")
        # A rewrite that outlasts its timeout falls back to the heuristic: never on a busy machine here.
        settings = make_settings(engine.config.index.data_dir, openai_base_url=model.base_url, openai_api_key="k",
                                 followup_rewrite_timeout_s=60.0)
        argv = ["run", "--docs", str(corpus / "docs"), "--golden", str(corpus / "golden.jsonl"),
                "--docs", str(other / "docs"), "--golden", str(other / "golden.jsonl"), "--json"]
        assert runner.main(argv, engine=engine, settings=settings) in (0, 1)  # 1: a bar missed, not a crash
    finally:
        model.stop()
    report = json.loads(capsys.readouterr().out)
    first, second = report["sets"].values()
    rewrites = [body for _, body, _ in model.requests if body["messages"][0]["content"] == REWRITE_PROMPT]
    assert len(rewrites) == 2  # the follow-up, searched once while scoring retrieval and once to answer
    assert first["answered_rate"] == 1.0 and second["answered_rate"] > 0


def test_the_gate_is_fitted_on_the_sets_that_hold_both_labels() -> None:
    """A set of answerable questions only weighs nothing in the fit; within a set the two labels
    weigh the same; every set with both labels weighs the same."""
    weights = calibrate.fit_weights([[True, True, False], [True, False], [True, True]])
    assert weights[5:].tolist() == [0.0, 0.0]
    assert (weights[0] + weights[1] == pytest.approx(weights[2]) == pytest.approx(weights[3])
            == pytest.approx(weights[4]))
    assert weights.sum() == pytest.approx(7) and not calibrate.fit_weights([[True], [True, True]]).any()


def test_sweep_prints_the_grid_and_calibrate_writes_the_gate(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("DOCSBOT_DATA_DIR", str(tmp_path / "data"))
    other = second_corpus(tmp_path)
    sets = ["--docs", str(corpus / "docs"), "--golden", str(corpus / "golden.jsonl"),
            "--docs", str(other / "docs"), "--golden", str(other / "golden.jsonl")]
    assert sweep.main(["sweep", *sets, "--grid", '{"rrf_k": [10, 60], "max_chunks_per_doc": [1]}']) == 0
    out = capsys.readouterr().out
    assert "rrf_k [10, 60]" in out and "dense only" in out and "bm25 only" in out
    tried = len(sweep.points(sweep.GRID | {"rrf_k": [10, 60], "max_chunks_per_doc": [1]}))
    assert f"({tried} points)" in out and len(re.findall(r"^\d+\s+rrf_k=", out, re.M)) == 15  # --top
    today = next(line for line in out.splitlines() if line.startswith("today's defaults"))
    assert "bm25_weight=1.5," in today and ": rank " in today  # a list's weight axis: DOCSBOT_LIST_WEIGHTS's
    gate = tmp_path / "gate.json"
    # no unanswerable question of these sets reaches the gate (below the floor or above the level)
    assert calibrate.main(["calibrate", *sets, "--out", str(gate)]) == 2 and not gate.exists()
    assert "no set has both answerable and unanswerable questions" in capsys.readouterr().err
    near_miss = {"id": "cats", "question": "are cats welcome in the office?", "gold_doc_ids": [], "answerable": False,
                 "level": "public"}
    with (corpus / "golden.jsonl").open("a") as golden:  # on the pets page's topic: it reaches the gate
        golden.write(json.dumps(near_miss) + "\n")
    assert calibrate.main(["calibrate", *sets, "--out", str(gate)]) == 0
    model = answerability.load(gate)
    assert set(model.weights) == set(answerability.FEATURES) and 0 < model.threshold < 1
    assert "macro bal.acc" in capsys.readouterr().out
