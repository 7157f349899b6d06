"""Fact held, answer length and markup residue in the eval report (eval/facts.py, issue 37)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import facts
from eval.golden import GoldenError
from eval.runner import Failures
from rag.answer import NOT_SURE_LEAD, Answer, Citation, Diagnostics
from rag.engine import Engine
from tests.test_eval import corpus, engine, load_case, run_main  # noqa: F401  (fixtures)


def answer(text: str, answered: bool = True, gold: bool = True, confidence: str = "") -> Answer:
    cited = [Citation(1, "a.md" if gold else "b.md", "A", "", "", "", "", "", 0.5)]
    return Answer("q", text, answered, None if answered else "no_match", cited if answered or confidence else [],
                  Diagnostics(), "public", confidence=confidence or ("answer" if answered else "declined"))


def test_a_decline_never_holds_the_fact_even_when_its_near_miss_matches() -> None:
    case = load_case({"id": "c", "question": "how long is the leave?", "gold_doc_ids": ["a.md"],
                      "answerable": True, "facts": [r"\b(10|ten)\s*days", "paid"]})
    failures = Failures()
    report = facts.fact_report([case, case, case], [
        answer("You get ten days of paid leave [1]."),
        answer("You get 10 days of leave [1]."),  # one regex of two
        answer("I'm not sure the docs answer this (closest: 10 days paid leave)", answered=False),
    ], failures)
    assert report["fact_held_rate"] == pytest.approx(1 / 3) and report["fact_cases"] == 3
    assert report["fact_shown"] == pytest.approx(1 / 3) and report["declined_rate"] == pytest.approx(1 / 3)
    assert failures.reasons["c"] == ["the fact is not shown: \\b(10|ten)\\s*days & paid"] * 2


def test_a_not_sure_passage_shows_the_fact_but_does_not_hold_it_and_a_wrong_page_shows_nothing() -> None:
    """Fact shown counts a not-sure passage that cites a gold page; fact held (confident), only an
    answer; a passage or answer from another page shows no fact, whatever its words."""
    case = load_case({"id": "c", "question": "how long is the leave?", "gold_doc_ids": ["a.md"],
                      "answerable": True, "facts": [r"\b(10|ten)\s*days"]})
    uncovered = load_case({"id": "u", "question": "is there a pension?", "gold_doc_ids": [], "answerable": False})
    passage = f"{NOT_SURE_LEAD}\n\nYou get 10 days of leave [1]."
    report = facts.fact_report([case, case, case, uncovered], [
        answer(passage, answered=False, confidence="not_sure"),
        answer("You get 10 days of leave [1].", gold=False),
        answer("You get 10 days of leave [1]."),
        answer(passage, answered=False, confidence="not_sure"),
    ], Failures())
    assert report["fact_shown"] == pytest.approx(2 / 3) and report["fact_held_confident"] == pytest.approx(1 / 3)
    assert report["fact_held_rate"] == pytest.approx(2 / 3)  # held, whichever page it cites
    assert report["not_sure_rate"] == pytest.approx(1 / 3) and report["declined_rate"] == 0
    assert report["gold_shown_rate"] == pytest.approx(2 / 3)
    assert report["uncovered_not_sure"] == 1 and report["uncovered_answered"] == 0
    assert report["answer_words_p50"] == 6  # the passage without its lead


def test_follow_ups_fact_shown_is_reported_per_set_and_pooled_by_case() -> None:
    row = {"question": "how long is the leave?", "gold_doc_ids": ["a.md"], "answerable": True,
           "facts": [r"\b(10|ten)\s*days"]}
    alone = load_case({"id": "c", **row})
    follow_up = load_case({"id": "f", **row, "question": "and for a relative?",
                           "history": [{"speaker": "user", "text": "how long is compassionate leave?"}]})
    shows, misses = answer("You get 10 days of leave [1]."), answer("You get 3 days of leave [1].")
    one = facts.fact_report([alone, follow_up, follow_up], [misses, shows, misses], Failures())
    two = facts.fact_report([follow_up], [shows], Failures())
    assert (one["followup_fact_shown"], one["followup_fact_cases"], one["fact_shown"]) == (0.5, 2, pytest.approx(1 / 3))
    assert facts.pooled({"one": one, "two": two})["followup_fact_shown_pooled"] == pytest.approx(2 / 3)
    assert facts.pooled({"one": facts.fact_report([alone], [shows], Failures())})["followup_fact_shown_pooled"] is None


def test_lengths_count_words_with_and_without_code_and_tables() -> None:
    text = "Run this [1]:\n```sh\nmake a b c d\n```\n| a | b |\n|---|---|\n| 1 | 2 |\nthen wait."
    assert facts.words(text) == 14
    assert facts.words(facts.prose(text)) == 4


@pytest.mark.parametrize(("text", "kind"), [
    ("See <a href='x'>the page</a>.", "html tag"),
    ("## Leave\nTen days.", "markdown heading"),
    ("Use :ref:`config` for that.", "rst role or directive"),
    ("See xref:theme.adoc[the theme].", "asciidoc"),
    ("Ten days {#leave}.", "anchor or generator token"),
    ("import Tabs from '@theme/Tabs';\nTen days.", "mdx"),
])
def test_markup_residue_names_what_slack_would_show_as_is(text: str, kind: str) -> None:
    assert facts.residue(text) == [kind]


@pytest.mark.parametrize("text", ["See [the page](https://x.example/a).", "See [the page](../leave.md#days).",
                                  "> [!NOTE]\n> Ten days.", "**Ten** days, __paid__."])
def test_what_the_slack_renderer_rewrites_is_no_residue(text: str) -> None:
    assert facts.residue(text) == []


def test_no_residue_in_plain_text_slack_links_or_code() -> None:
    assert facts.residue("Ten days, see <https://x.example|the page> [1].\n```\n<b>**x**</b>\n```") == []
    assert facts.residue("Download `nwl-<device>.conf` now.") == []


def test_follow_up_history_in_chat_roles() -> None:
    case = load_case({"id": "c", "question": "and after that?", "gold_doc_ids": ["a.md"], "answerable": True,
                      "history": [{"role": "user", "text": "how long?"}, {"role": "assistant", "text": "Ten days."}]})
    assert case.history == (("user", "how long?"), ("agent", "Ten days."))


def test_an_overlay_gives_facts_by_row_id_and_rejects_unknown_ids_and_bad_regexes(tmp_path: Path) -> None:
    case = load_case({"id": "c", "question": "q", "gold_doc_ids": ["a.md"], "answerable": True})
    overlay = tmp_path / "facts.json"
    overlay.write_text(json.dumps({"note": "why", "c": [r"\b10\b"]}))
    assert facts.with_overlay([case], overlay)[0].facts == (r"\b10\b",)
    overlay.write_text(json.dumps({"d": [r"\b10\b"]}))
    with pytest.raises(GoldenError, match="no such row ids: d"):
        facts.with_overlay([case], overlay)
    overlay.write_text(json.dumps({"c": ["(10"]}))
    with pytest.raises(GoldenError, match="is not a regular expression"):
        facts.with_overlay([case], overlay)


def test_run_reports_facts_per_set_and_pools_uncovered_answers(
    corpus: Path, engine: Engine, tmp_path: Path, capsys: pytest.CaptureFixture[str]  # noqa: F811
) -> None:
    (tmp_path / "facts.json").write_text(json.dumps({"pets": ["fridays"], "salary": [r"\b25th"]}))
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"sets": [
        {"name": "one", "docs": "docs", "golden": ["golden.jsonl"], "facts": "facts.json"},
        {"name": "two", "docs": "docs", "golden": ["golden.jsonl"]},
        {"name": "three", "docs": "nowhere", "golden": ["golden.jsonl"]},
    ]}))
    assert run_main(["run", "--suite", str(suite), "--set", "one", "--set", "two", "--json"], engine) == 0
    report = json.loads(capsys.readouterr().out)
    one, two = report["sets"]["one"], report["sets"]["two"]
    assert one["fact_held_rate"] == 1.0 and one["fact_cases"] == 2 and two["fact_held_rate"] is None
    assert (one["uncovered"], one["uncovered_answered"]) == (2, 0)
    assert report["macro"]["uncovered_answered_pooled"] == 0.0
    assert report["macro"]["worst_fact_held"] == ["one", 1.0]
    assert one["markup_residue_rate"] == 0.0 and 0 < one["answer_words_p50"] <= one["answer_words_p90"]
    assert run_main(["run", "--suite", str(suite), "--set", "four"], engine) == 2
    assert "no set named four" in capsys.readouterr().err
