"""An "I don't know" that still gets the person to the page. When the gate doubts what it found,
the reply quotes the closest passage, cited, as "not sure" (issue 50); when the question names
something the docs never mention, it declines and names the closest section the reader may see;
when nothing came close it says nothing covers it (issues 22 item 3, 24 item 6)."""
from __future__ import annotations

import json

from bot.blocks import NOT_SURE_CONTEXT, SOURCES, answer_body, answer_message
from commands.cli import render_answer
from rag.answer import ABSTAIN_MESSAGES, NOT_SURE_LEAD
from rag.engine import Engine
from rag.levels import Level

# q05 of eval/golden.jsonl: the rollback runbook covers it, the gate doubts it (answerability 0.34)
ROLLBACK = "tidepool-api is throwing 500s since the last deploy, how do I roll it back?"


async def test_a_doubted_match_is_quoted_as_not_sure_with_its_page_cited(sample_engine: Engine) -> None:
    answer = await sample_engine.ask(ROLLBACK, Level.team)
    assert not answer.answered and answer.abstain_reason == "no_match" and answer.confidence == "not_sure"
    assert answer.answer.startswith(NOT_SURE_LEAD + "\n\n") and "argocd app set" in answer.answer
    assert [c.doc_path for c in answer.citations][0] == "runbooks/rollback.md"
    assert all(Level.parse(c.access) <= Level.team for c in answer.citations)
    shown = answer.to_json()
    assert shown["confidence"] == "not_sure" and shown["answered"] is False
    assert shown["citations"][0]["doc_path"] == "runbooks/rollback.md" and shown["near_miss"] is None
    message = json.dumps(answer_message(answer, "a1"), ensure_ascii=False)
    assert SOURCES in message and NOT_SURE_CONTEXT in message  # the page, and a visible "not sure"
    assert answer_body(answer).startswith("I couldn't find a sure answer")
    assert render_answer(shown).splitlines()[-1].startswith("  [")


async def test_a_name_the_docs_never_mention_is_declined_naming_the_closest_section(sample_engine: Engine) -> None:
    answer = await sample_engine.ask("how do I call tidepool-api over gRPC?", Level.team)
    assert not answer.answered and answer.abstain_reason == "no_match" and answer.confidence == "declined"
    assert answer.answer == ABSTAIN_MESSAGES["unsure"] and not answer.citations
    near = answer.near_miss
    assert near is not None and Level.parse(near.access) <= Level.team
    assert answer.to_json()["near_miss"]["doc_path"] == near.doc_path
    assert "access" not in answer.to_json()["near_miss"]
    shown = answer_body(answer)
    assert shown.startswith("I'm not sure the docs answer this. The closest I found: ")
    assert near.title in shown and (not near.url or f"<{near.url}|" in shown)
    assert render_answer(answer.to_json()).splitlines()[1].startswith(f"  closest {near.title}")
    assert NOT_SURE_CONTEXT not in json.dumps(answer_message(answer, "a1"), ensure_ascii=False)


async def test_nothing_close_is_said_as_nothing_covers_it(sample_engine: Engine) -> None:
    answer = await sample_engine.ask("what is the airspeed velocity of an unladen swallow?", Level.restricted)
    assert answer.abstain_reason == "no_match" and answer.near_miss is None
    assert answer.answer == ABSTAIN_MESSAGES["no_match"]


async def test_no_pointer_ever_names_a_section_above_the_readers_level(sample_engine: Engine) -> None:
    for question in (ROLLBACK, "how long are break-glass db credentials valid?",
                     "one of our EC2 instances looks compromised, should I shut it down?"):
        answer = await sample_engine.ask(question, Level.public)
        assert answer.near_miss is None or Level.parse(answer.near_miss.access) == Level.public, question
        # nor does a not-sure passage quote one
        assert all(Level.parse(c.access) == Level.public for c in answer.citations), question
        assert all(Level.parse(r["access"]) == Level.public for r in answer.retrieved), question
