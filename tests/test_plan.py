"""Showing the work of a slow answer (issue 52 item 2): Slack's plan block in the placeholder of
an answer that takes over 2 s ("searching the docs", "reading <page>", "checking citations", each
finished or failed), kept above the answer; never on a fast one. Signed mentions to the real
app, a model that takes 3 s (the OpenAI stand-in), the Slack stand-in checking the block's shape."""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bot.blocks import WORKING
from bot.conversation import history_of
from bot.local import demo
from bot.local.harness import local_slack
from bot.local.standin import visible_text
from bot.plan import PLAN_AFTER_S, TITLE_DONE, TITLE_WORKING
from eval.standins.openai_server import OpenAIStandIn
from foundation.settings import Settings
from rag import Level
from rag.engine import Engine
from tests.support.slack import VPN, answers, mention, model_settings, with_model
from tests.test_streaming import LONG

EVAL = Path(__file__).resolve().parent.parent / "eval"
TRIES = 5  # per question, in the threshold's measurement
REPLY = "Install the client from the VPN portal and sign in with your SSO account [1]."


def plans(params: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for p in params for b in (p.get("blocks") or []) if b.get("type") == "plan"]


def tasks(plan: dict[str, Any]) -> dict[str, str]:
    return {t["title"]: t["status"] for t in plan["tasks"]}


async def test_a_slow_answer_shows_its_steps_then_keeps_them(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: REPLY
    openai_standin.delay_s = 3.0
    settings = model_settings(settings, openai_standin, llm_stream=False)
    async with local_slack(settings, with_model(sample_engine, settings)) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        shown = plans(local.standin.calls_to("chat.update", ok_only=True))
        working = [p for p in shown if p["title"] == TITLE_WORKING]
        assert working, "the placeholder never showed the plan"
        # while the model writes (3 s), the plan shows the search done and the page being read
        # (which edit first shows it depends on how far the answer got in 2 s on a loaded machine)
        assert any(tasks(p).get("Searching the docs") == "complete"
                   and any(title.startswith("Reading VPN Setup") and status == "in_progress"
                           for title, status in tasks(p).items()) for p in working), [tasks(p) for p in working]
        [answer] = answers(local, demo.GENERAL)
        [kept] = plans([answer])
        assert kept["title"] == TITLE_DONE and set(tasks(kept).values()) == {"complete"}
        assert "Checking citations" in tasks(kept) and "SSO account" in visible_text(answer)


async def test_a_streamed_slow_answer_keeps_its_plan_when_the_stream_stops(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: LONG  # longer than a stream's buffer: it streams
    openai_standin.delay_s = 3.0
    settings = model_settings(settings, openai_standin)
    async with local_slack(settings, with_model(sample_engine, settings)) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        assert [p["title"] for p in plans(local.standin.calls_to("chat.update", ok_only=True))][0] == TITLE_WORKING
        [stop] = local.standin.calls_to("chat.stopStream", ok_only=True)
        [kept] = plans([stop])
        assert kept["title"] == TITLE_DONE and set(tasks(kept).values()) == {"complete"}


async def test_a_model_that_fails_shows_the_step_that_failed(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: REPLY.replace("[1]", "[99]")  # cites no source
    openai_standin.delay_s = 3.0
    settings = model_settings(settings, openai_standin, llm_stream=False)
    async with local_slack(settings, with_model(sample_engine, settings)) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        [answer] = answers(local, demo.GENERAL)
        [kept] = plans([answer])
        assert tasks(kept)["Checking citations"] == "error" and tasks(kept)["Searching the docs"] == "complete"


async def test_a_slow_long_answer_keeps_its_text_rather_than_its_plan(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    """An answer as long as a message may hold, written slowly: its plan showed, and the answer
    posted is its whole text and sources, without the plan (Slack would refuse both together:
    msg_blocks_too_long; before, the answer failed with that)."""
    openai_standin.reply = lambda messages: "All of this is in the VPN guide [1]. " * 600
    openai_standin.delay_s = 3.0
    settings = model_settings(settings, openai_standin, llm_stream=False)
    async with local_slack(settings, with_model(sample_engine, settings)) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        assert [p["title"] for p in plans(local.standin.calls_to("chat.update", ok_only=True))][0] == TITLE_WORKING
        [answer] = answers(local, demo.GENERAL)
        assert plans([answer]) == [] and "*Sources*" in visible_text(answer)
        assert visible_text(answer).count("All of this is in the VPN guide") > 200


async def test_a_fast_answer_never_shows_a_plan(local) -> None:  # type: ignore[no-untyped-def]
    for channel in (demo.GENERAL, demo.ENG):
        await mention(local, demo.BOB, channel, VPN)
    await local.settle()
    calls = [c.params for c in local.standin.calls if c.method.startswith("chat.")]
    assert calls and plans(calls) == []


async def test_the_embedded_answerer_answers_the_dev_suites_docs_well_within_the_threshold(
    sample_engine: Engine,
) -> None:
    """The threshold, measured: every docs-sync golden question with the embedded answerer
    (77 of them) is answered well within PLAN_AFTER_S, so none shows a plan: at most half of it,
    and half of them in a tenth. Measured: p50 0.04 s, max 0.10 s on an idle machine; p50 0.085 s,
    max 0.49 s at load 7 on the shared 2 cores.

    Wall time on a machine shared with other test runs: one question first (what the process
    pays once, not an answer), then a question over a quarter of PLAN_AFTER_S is asked again,
    up to TRIES times in all, and its fastest try counts. A try another process preempted says
    nothing of the answer; an answer that is slow (work or waiting) is slow every time."""
    rows = [json.loads(line) for line in (EVAL / "golden.jsonl").read_text().splitlines() if line.strip()]
    again_over = PLAN_AFTER_S / 4

    async def seconds(row: dict[str, Any]) -> float:
        started = time.perf_counter()
        await sample_engine.ask(row["question"], Level[row.get("level") or "restricted"])
        return time.perf_counter() - started

    await seconds(rows[0])
    best = []
    for row in rows:
        took = [await seconds(row)]
        while min(took) >= again_over and len(took) < TRIES:
            took.append(await seconds(row))
        best.append(min(took))
    best.sort()
    assert len(best) == 77 and max(best) < PLAN_AFTER_S / 2 and best[38] < PLAN_AFTER_S / 10, (best[38], best[-3:])


def test_a_placeholder_showing_a_plan_is_no_turn_of_the_thread() -> None:
    placeholder = {"ts": "1.000002", "user": "U_DOCSBOT", "text": WORKING}
    assert history_of([placeholder], "2.000001", "U_DOCSBOT") == []
