"""The core end to end on the sample docs: real index, real model, extractive answerer."""
import re
import time

import numpy as np
import pyarrow as pa

from foundation.settings import Settings
from foundation.wiring import rag_config
from rag.engine import Engine
from rag.followup import REWRITE_PROMPT
from rag.generation import ExtractiveAnswerer, LLMChat
from rag.levels import Level
from rag.retrieval import fill_rows
from rag.store.search import Store
from tests.support.settings import make_settings


async def test_covered_question_is_answered_with_versioned_citation(sample_engine: Engine):
    answer = await sample_engine.ask("Can I deploy to production on a Friday?", Level.team)
    assert answer.answered, answer.detail
    cited = {c.doc_path for c in answer.citations}
    assert "policies/deploy-policy.md" in cited
    c = next(c for c in answer.citations if c.doc_path == "policies/deploy-policy.md")
    assert c.title == "Deploy Policy" and c.version
    assert re.fullmatch(r"[0-9a-f]{40}", c.commit) and c.commit_date[:2] == "20"
    assert all(f"[{c.n}]" in answer.answer for c in answer.citations)
    assert answer.diagnostics.selected >= 1 and answer.diagnostics.timings_ms["total_ms"] > 0


async def test_a_question_with_a_lone_surrogate_is_answered_not_raised(sample_engine: Engine):
    """A JSON '\\ud800' in a Slack payload (or undecodable argv bytes) reaches the engine as a lone
    surrogate, which the tokenizer refused with a TypeError (issue 51's probe)."""
    answer = await sample_engine.ask("how many vacation days\ud800 do I get?", Level.team,
                                     [("user", "hi\udfff"), ("agent", "hello")])
    assert answer.answered and "28 vacation days" in answer.answer
    retrieval, _, _ = await sample_engine.search("vacation\ud800 days", Level.team)
    assert retrieval.selected


async def test_unrelated_question_abstains_no_match(sample_engine: Engine):
    answer = await sample_engine.ask("What is on the cafeteria lunch menu this week?", Level.restricted)
    assert not answer.answered and answer.abstain_reason == "no_match" and answer.citations == []


async def test_restricted_doc_is_no_access_below_its_level(any_sample_engine: Engine):
    sample_engine = any_sample_engine  # on each store
    question = "How do I get emergency break-glass access to the production database?"
    low = await sample_engine.ask(question, Level.team)
    assert low.abstain_reason == "no_access" and low.citations == [] and low.retrieved == []
    assert "tp-breakglass" not in low.answer
    high = await sample_engine.ask(question, Level.restricted)
    assert high.answered and "runbooks/emergency-db-access.md" in {c.doc_path for c in high.citations}


async def test_access_hint_can_be_turned_off(sample_engine: Engine, settings: Settings):
    sample_engine.config = rag_config(settings.model_copy(update={"access_hint": False}))
    answer = await sample_engine.ask("How do I get emergency break-glass access to the production database?",
                                     Level.team)
    assert answer.abstain_reason != "no_access"
    assert all(c.access != "restricted" for c in answer.citations)


async def test_access_filter_runs_inside_the_search_before_top_k(any_sample_engine: Engine, embedder):
    store = any_sample_engine.store  # on each store
    vector = embedder.embed(["emergency production database access break glass"])[0]
    public = await store.dense(vector, int(Level.public), 10)
    assert len(public) == 10 and {h.row["access_rank"] for h in public} == {0}
    text = await store.text("breakglass database emergency credentials", int(Level.public), 10)
    assert text and {h.row["access_rank"] for h in text} == {0}
    assert await store.text("zyxwvut", int(Level.restricted), 10) == []  # no match is an empty list
    unfiltered = await store.dense(vector, int(Level.restricted), 3)
    assert unfiltered[0].row["access_rank"] == 2  # the filter is what kept it out above
    assert np.isclose(unfiltered[0].score, float(unfiltered[0].vector @ vector), atol=1e-4)


async def test_injection_chunk_is_dropped_and_counted(sample_engine: Engine):
    answer = await sample_engine.ask("Is there a note for assistants in the VPN setup guide about the admin password?",
                                     Level.public)
    assert "hunter2" not in answer.answer
    assert answer.diagnostics.injections_dropped >= 1


async def test_follow_up_uses_thread_history(sample_engine: Engine):
    history = [("user", "How do I roll back tidepool-api after a bad deploy?"), ("agent", "Use helm rollback [1]")]
    answer = await sample_engine.ask("and how long does that usually take?", Level.team, history)
    assert answer.answered
    assert "runbooks/rollback.md" in {c.doc_path for c in answer.citations}


async def test_missing_index_is_an_abstention_not_a_crash(tmp_path, embedder):
    settings = make_settings(tmp_path / "nothing-here")
    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    answer = await engine.ask("anything", Level.team)
    assert answer.abstain_reason == "index_unavailable" and "docsbot index" in answer.detail


async def test_standalone_question_in_a_thread_is_not_mixed_with_the_previous_one(sample_engine: Engine):
    history = [("user", "How do I roll back tidepool-api after a bad deploy?"), ("agent", "Use helm rollback [1]")]
    question = "how long is a VPN configuration valid?"
    assert await sample_engine.search_query(question, history) == question
    answer = await sample_engine.ask(question, Level.public, history)
    assert answer.answered and {c.doc_path for c in answer.citations} == {"onboarding/vpn-setup.md"}


def llm_engine(sample_engine: Engine, openai_standin, **overrides) -> Engine:
    config = rag_config(make_settings(sample_engine.config.index.data_dir, openai_base_url=openai_standin.base_url,
                                      **overrides))
    return Engine(config, sample_engine.store, sample_engine.embedder, LLMChat(config.llm))


async def test_follow_up_is_rewritten_by_the_llm_then_answered(sample_engine: Engine, openai_standin):
    def reply(messages: list[dict[str, str]]) -> str:
        if messages[0]["content"] == REWRITE_PROMPT:
            return "How do I set up the VPN on Linux?"
        return "Install wireguard with apt-get [1]."
    openai_standin.reply = reply
    engine = llm_engine(sample_engine, openai_standin)
    history = [("user", "How do I set up the VPN on macOS?"), ("agent", "Use Self Service [1].")]
    answer = await engine.ask("and on Linux?", Level.public, history)
    assert answer.answered and answer.citations[0].doc_path == "onboarding/vpn-setup.md"
    rewrite = openai_standin.requests[0][1]["messages"][1]["content"]
    assert "How do I set up the VPN on macOS?" in rewrite and "and on Linux?" in rewrite


async def test_a_slow_rewrite_falls_back_to_the_heuristic(sample_engine: Engine, openai_standin):
    openai_standin.delay_s = 1.0
    engine = llm_engine(sample_engine, openai_standin, followup_rewrite_timeout_s=0.2)
    history = [("user", "How do I set up the VPN on macOS?"), ("agent", "Use Self Service [1].")]
    started = time.perf_counter()
    query = await engine.search_query("and on Linux?", history)
    assert query == "How do I set up the VPN on macOS?\nand on Linux?"
    assert time.perf_counter() - started < 0.9


async def test_a_chunk_removed_after_the_search_is_left_out_not_an_error(sample_engine: Engine):
    """A sync that replaces a document between the search and the row read: its chunks are gone."""
    retrieval, _, _ = await sample_engine.search("How long is a VPN configuration valid?", Level.restricted)
    first = retrieval.selected[0].row["doc_path"]
    empty = pa.Table.from_pylist([], schema=sample_engine.store.chunks().schema)
    sample_engine.store.write(empty, [first])  # a real commit removing that document's chunks
    kept = await fill_rows(sample_engine.store, retrieval.selected)
    assert kept and all(c.row["doc_path"] != first for c in kept)
    assert [c.chunk_id for c in kept] == [c.chunk_id for c in retrieval.selected if c.row["doc_path"] != first]
    again, _, _ = await sample_engine.search("How long is a VPN configuration valid?", Level.restricted)
    assert again.selected and all(c.row["doc_path"] != first and "text" in c.row for c in again.selected)
