"""An "I don't know" that still gets the person to the page: when the gate declines but a section
the reader may see came close, the reply says it is not sure and names that section; when nothing
came close it says nothing covers it (issues 22 item 3, 24 item 6)."""
from __future__ import annotations

from bot.blocks import answer_body
from commands.cli import render_answer
from rag.answer import ABSTAIN_MESSAGES
from rag.engine import Engine
from rag.levels import Level

# q05 of eval/golden.jsonl: the rollback runbook covers it, the gate declines it (answerability 0.48)
ROLLBACK = "tidepool-api is throwing 500s since the last deploy, how do I roll it back?"


async def test_a_declined_question_names_the_closest_section_the_reader_may_see(sample_engine: Engine) -> None:
    answer = await sample_engine.ask(ROLLBACK, Level.team)
    assert not answer.answered and answer.abstain_reason == "no_match"
    assert answer.answer == ABSTAIN_MESSAGES["unsure"]
    near = answer.near_miss
    assert near is not None and near.doc_path == "runbooks/rollback.md"
    assert Level.parse(near.access) <= Level.team
    assert answer.to_json()["near_miss"]["doc_path"] == "runbooks/rollback.md"
    assert "access" not in answer.to_json()["near_miss"]
    shown = answer_body(answer)
    assert shown.startswith("I'm not sure the docs answer this. The closest I found: ")
    assert near.title in shown and (not near.url or f"<{near.url}|" in shown)
    assert render_answer(answer.to_json()).splitlines()[1].startswith(f"  closest {near.title}")


async def test_nothing_close_is_said_as_nothing_covers_it(sample_engine: Engine) -> None:
    answer = await sample_engine.ask("what is the airspeed velocity of an unladen swallow?", Level.restricted)
    assert answer.abstain_reason == "no_match" and answer.near_miss is None
    assert answer.answer == ABSTAIN_MESSAGES["no_match"]


async def test_no_pointer_ever_names_a_section_above_the_readers_level(sample_engine: Engine) -> None:
    for question in (ROLLBACK, "how long are break-glass db credentials valid?",
                     "one of our EC2 instances looks compromised, should I shut it down?"):
        answer = await sample_engine.ask(question, Level.public)
        assert answer.near_miss is None or Level.parse(answer.near_miss.access) == Level.public, question
