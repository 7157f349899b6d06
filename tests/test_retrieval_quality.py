"""The pure parts of retrieval and answering on hand-made inputs: query-adaptive list weights,
document-level fusion, the per-document cap, follow-up detection, citation renumbering, question
kinds, number bounds and the answerability parameter file."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from foundation.wiring import retrieval_config
from rag import answerability
from rag.check import renumber
from rag.followup import heuristic_query, looks_context_dependent
from rag.procedures import number_fit
from rag.kinds import fits_kind, question_kind
from rag.retrieval import HYBRID, RankedList, fuse, list_weights, mmr, rank, tied_ranks
from rag.signals import DENSE, SIGNALS, TEXT, Dense
from rag.store import Hit
from rag.terms import content_terms, question_terms
from tests.support.settings import make_settings


def hit(chunk: str, doc: str, vector: list[float], score: float = 1.0, text: str = "") -> Hit:
    v = np.array(vector, dtype=np.float32)
    return Hit({"chunk_id": chunk, "doc_path": doc, "access_rank": 0, "search_text": text}, v / np.linalg.norm(v),
               score)


def test_full_text_weight_follows_its_top_hits_term_coverage(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, list_weights={TEXT: 2.0}, fusion_coverage_power=1.0)
    full = [hit("a", "a.md", [1, 0], text="autovacuum settings for PostgreSQL")]
    half = [hit("a", "a.md", [1, 0], text="PostgreSQL replicas")]
    question = "autovacuum postgresql"
    config = retrieval_config(settings)
    assert list_weights({DENSE: [], TEXT: full}, question, config, "hybrid") == {DENSE: 1.0, TEXT: 2.0}
    assert list_weights({DENSE: [], TEXT: half}, question, config, "hybrid") == {DENSE: 1.0, TEXT: 1.0}
    assert list_weights({DENSE: [], TEXT: []}, question, config, "hybrid") == {DENSE: 1.0, TEXT: 0.0}
    fixed = retrieval_config(settings.model_copy(update={"fusion_coverage_power": 0.0}))
    assert list_weights({DENSE: [], TEXT: half}, question, fixed, "hybrid") == {DENSE: 1.0, TEXT: 2.0}
    assert list_weights({TEXT: half}, question, config, "bm25") == {TEXT: 2.0}  # one list: nothing to weigh


def test_fusion_takes_every_list_it_is_given_weighted_by_name(tmp_path: Path) -> None:
    """A third list is one Signal object: fused with the others by its configured weight, searched
    alone in its own mode, and left out where the signals fused are the registered two."""
    third = Dense("third", 0.5)
    query = np.array([1.0, 0.0], dtype=np.float32)
    found = {DENSE: [hit("d", "d.md", [1, 0.1])], TEXT: [hit("t", "t.md", [1, 0.2])],
             "third": [hit("x", "x.md", [1, 0.3])]}
    settings = make_settings(tmp_path, max_chunks_per_doc=0, min_similarity=0.0)
    config = retrieval_config(settings)
    signals = (*SIGNALS, third)
    assert list_weights(found, "q", config, HYBRID, signals) == {DENSE: 1.0, TEXT: 1.5, "third": 0.5}
    first = [c.row["doc_path"] for c in rank(found, query, "q", config, HYBRID, signals).selected]
    assert first[0] == "t.md" and set(first) == {"d.md", "t.md", "x.md"}
    heavy = replace(config, list_weights={DENSE: 1.0, TEXT: 1.5, "third": 3.0})
    assert rank(found, query, "q", heavy, HYBRID, signals).selected[0].row["doc_path"] == "x.md"
    assert [c.row["doc_path"] for c in rank(found, query, "q", heavy, "third", signals).selected] == ["x.md"]
    assert "x.md" not in [c.row["doc_path"] for c in rank(found, query, "q", heavy).selected]  # not registered


def test_document_fusion_lifts_a_page_both_lists_found() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    dense = [hit("x1", "x.md", [1, 0.1]), hit("a1", "a.md", [1, 0.2])]
    text = [hit("y1", "y.md", [1, 0.3]), hit("a2", "a.md", [1, 0.4])]
    lists = [RankedList(DENSE, dense, 1.0), RankedList(TEXT, text, 1.0)]
    chunk_level = fuse(lists, query, 10)
    assert chunk_level[0].row["doc_path"] in ("x.md", "y.md")  # each list's first chunk wins
    doc_level = fuse(lists, query, 10, doc_share=0.5)
    assert doc_level[0].row["doc_path"] == "a.md"  # second in both lists: first page overall


def test_per_document_cap_leaves_room_for_a_second_page() -> None:
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    dense = [hit("a1", "a.md", [1, 0, 0.1]), hit("a2", "a.md", [1, 0.1, 0]), hit("a3", "a.md", [1, 0.2, 0]),
             hit("b1", "b.md", [0.5, 1, 0])]
    fused = fuse([RankedList(DENSE, dense, 1.0)], query, 10)
    assert [c.row["doc_path"] for c in mmr(fused, 3, 1.0)] == ["a.md"] * 3
    assert [c.row["doc_path"] for c in mmr(fused, 3, 1.0, per_doc=2)] == ["a.md", "a.md", "b.md"]
    assert len(mmr(fused[:3], 3, 1.0, per_doc=1)) == 3  # no other page left: the cap gives way


@pytest.mark.parametrize("question, dependent", [
    ("what about Windows?", True), ("and on Linux?", True), ("does it expire?", True), ("why?", True),
    ("how do I set up the VPN on Linux?", False), ("who approves expenses over 2500 euros?", False),
])
def test_follow_up_detection(question: str, dependent: bool) -> None:
    assert looks_context_dependent(question) is dependent
    history = [("user", "how do I install the VPN on macOS?"), ("agent", "Use Self Service [1].")]
    expected = f"how do I install the VPN on macOS?\n{question}" if dependent else question
    assert heuristic_query(question, history) == expected
    assert heuristic_query(question, []) == question


def test_stems_and_synonyms_match_the_docs_words() -> None:
    assert content_terms("how long is a VPN configuration valid?") == content_terms("vpn configurations expire")
    assert "approve" in content_terms("who needs to sign off") and "approve" in content_terms("Approval needed")
    assert set(content_terms("how do I set up the VPN")) == {"install", "vpn"}
    # "gets" is a stop word as "get" is
    assert content_terms("who gets paged after 20 minutes?") == ["page", "20", "minute"]


def test_contractions_and_plurals_in_ies_match_the_docs_words() -> None:
    # "isn't" left "isn" as a question term no page contains, and "bodies" stemmed to "bodi"
    assert question_terms("what happens to bodies when there isn't enough pressure? we'll see") == {
        "body", "enough", "pressure"}
    assert content_terms("one body, two bodies; a city, three cities") == [
        "body", "two", "body", "city", "three", "city"]


def test_citations_renumbered_in_the_order_shown() -> None:
    text, order = renumber("First [3]. Then [1][3]. Both [3, 1].", [3, 1], 4)
    assert text == "First [1]. Then [2][1]. Both [1, 2]."
    assert order == [2, 0, 1, 3]


@pytest.mark.parametrize("question, kind, passage, fits", [
    ("how long is the configuration valid?", "duration", "Configurations expire after 90 days.", 1.0),
    ("who gets paged after 20 minutes?", "person", "After: 20 min; Who is paged: Engineering manager on duty", 1.0),
    ("why did we choose Kafka?", "reason", "We needed a durable, replayable log.", 1.0),
    ("how do I set up the VPN on Linux?", "steps", "```bash\nsudo wg-quick up nwl\n```", 1.0),
    ("why did we choose Kafka?", "reason", "```yaml\nname: topic\n```", 0.0),
    ("when is the code freeze?", "when", "The freeze runs from December 20 to January 3.", 1.0),
])
def test_question_kinds(question: str, kind: str, passage: str, fits: float) -> None:
    assert question_kind(question) == kind
    assert fits_kind(kind, "", passage) == fits


def test_numbers_in_the_question_against_stated_bounds() -> None:
    question = "who approves an expense of 3000 euros?"
    assert number_fit(question, "Amount: Over €2,500; Approval: your manager and the department head") == 1
    assert number_fit(question, "Amount: €500.01 – €2,500; Approval: your manager") == -1
    assert number_fit(question, "Amount: Up to €500; Approval: none") == -1
    assert number_fit(question, "Receipts are needed for every expense.") == 0


def test_answerability_file_is_checked(tmp_path: Path) -> None:
    good = answerability.load()  # the calibrated file in the package
    assert 0 < good.threshold < 1 and set(good.weights) <= set(answerability.FEATURES)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"features": {"nonsense": 1.0}, "means": {}, "scales": {}, "bias": 0, "threshold": 0.5}))
    with pytest.raises(answerability.AnswerabilityError, match="bad.json"):
        answerability.load(bad)
    assert answerability.NEUTRAL.answerable({})[0]


def test_tied_scores_weigh_the_same_whichever_a_store_lists_first() -> None:
    query = np.array([1.0, 0.0], dtype=np.float32)
    best, first, second = (hit("c1", "c.md", [1, 0.3], 5.0), hit("a1", "a.md", [1, 0.1], 4.76),
                           hit("b1", "b.md", [1, 0.2], 4.76))
    for listed in ([best, first, second], [best, second, first]):
        fused = {c.chunk_id: c.fused for c in fuse([RankedList(TEXT, listed, 1.5)], query, 10)}
        assert fused["a1"] == fused["b1"] == 1.5 / (10 + 1.5 + 1) and fused["c1"] == 1.5 / 11
    assert tied_ranks([5.0, 4.0, 4.0, 4.0, 3.0]) == [0, 2, 2, 2, 4]
