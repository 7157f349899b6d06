"""Feedback end to end through Slack: the real aiohttp Bolt app with signed requests and the Slack
Web API stand-in, the real index and answer log on disk, a restart between the answer and the
feedback; then the review CLI and the eval replay the 👎 as a golden case."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bot.local import demo
from bot.blocks import FEEDBACK_DOWN, FEEDBACK_UP
from bot.deliveries import Delivered, buttons
from bot.feedback import EXPECTED_INPUT, EXPIRED, FEEDBACK_EXPLAIN, FEEDBACK_FORM, REASON_INPUT, THANKS
from bot.local.harness import LocalSlack, local_slack
from foundation.settings import Settings
from eval import runner
from eval.__main__ import main as eval_main
from eval.golden import load_golden
from pydantic import SecretStr

from rag.engine import Engine
from rag.levels import Level
from tests.support.settings import SAMPLE_DOCS
from tests.support.slack import answers

VPN = "how do I set up the VPN?"


async def reaction(local: LocalSlack, kind: str, user: str, name: str, message: dict[str, Any],
                   channel: str, event_id: str | None = None, retry: int = 0) -> Delivered:
    """`reaction_added` / `reaction_removed` as the Events API delivers them."""
    event = {"type": kind, "user": user, "reaction": name, "item_user": local.standin.workspace.bot_user_id,
             "item": {"type": "message", "channel": channel, "ts": message["ts"]}, "event_ts": local.standin.next_ts()}
    delivered = await local.slack.event(event, event_id, retry)
    await local.settle()
    return delivered


def form_state(reason: str | None, expected: str | None) -> dict[str, dict[str, Any]]:
    """view.state.values of the feedback form as Slack sends it."""
    selected = {"text": {"type": "plain_text", "text": reason, "emoji": True}, "value": reason} if reason else None
    return {REASON_INPUT: {REASON_INPUT: {"type": "radio_buttons", "selected_option": selected}},
            EXPECTED_INPUT: {EXPECTED_INPUT: {"type": "plain_text_input", "value": expected}}}


def ephemerals(local: LocalSlack, user: str) -> list[dict[str, Any]]:
    return [p for p in local.standin.calls_to("chat.postEphemeral", ok_only=True) if p["user"] == user]


async def test_thumbs_down_in_slack_becomes_a_golden_case(
    sample_engine: Engine, settings: Settings, state_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    settings = settings.model_copy(update={"database_url": SecretStr(state_url)})
    async with local_slack(settings, sample_engine) as local:
        ts = local.standin.post_as_user(demo.GENERAL, demo.BOB, f"<@{local.standin.workspace.bot_user_id}> {VPN}")
        assert (await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, ts))).status == 200
        await local.settle()
        [message] = answers(local, demo.GENERAL)
    up, down = buttons(message)
    assert (up["action_id"], down["action_id"]) == (FEEDBACK_UP, FEEDBACK_DOWN)
    answer_id = down["value"]

    # -- restart: a new app, a new Slack connection, a new connection to the same state database -
    async with local_slack(settings, sample_engine) as local:
        for _ in range(2):  # a double click: two forms open, still one vote
            assert (await local.slack.click(demo.BOB, demo.GENERAL, down, message)).status == 200
            await local.settle()
        opened = local.standin.calls_to("views.open", ok_only=True)
        assert len(opened) == 2 and opened[0]["view"]["callback_id"] == FEEDBACK_FORM
        view = opened[-1]["view"]

        missing_reason = await local.slack.submit_view(demo.BOB, view, form_state(None, "x"))
        assert missing_reason.status == 200 and json.loads(missing_reason.body)["response_action"] == "errors"
        expected = "onboarding/vpn-setup.md has the Linux steps"
        submitted = await local.slack.submit_view(demo.BOB, view, form_state("outdated", expected))
        assert submitted.status == 200
        await local.settle()
        [thanks] = ephemerals(local, demo.BOB)
        assert thanks["text"] == THANKS and thanks["channel"] == demo.GENERAL and thanks["thread_ts"] == ts

        # Dan reacts 👎 with a skin tone: a vote, and a private note asking what was wrong;
        # the same delivery retried changes nothing; then he removes the reaction.
        first = await reaction(local, "reaction_added", demo.DAN, "-1::skin-tone-3", message, demo.GENERAL, "EvDAN1")
        again = await reaction(local, "reaction_added", demo.DAN, "-1::skin-tone-3", message, demo.GENERAL, "EvDAN1",
                               retry=1)
        assert first.status == again.status == 200
        [note] = ephemerals(local, demo.DAN)
        assert [b["action_id"] for b in buttons(note)] == [FEEDBACK_EXPLAIN] and note["thread_ts"] == ts
        await reaction(local, "reaction_removed", demo.DAN, "-1::skin-tone-3", message, demo.GENERAL)
        # Bob also reacts 👎: still one record for him; Alice finds it helpful
        await reaction(local, "reaction_added", demo.BOB, "thumbsdown", message, demo.GENERAL)
        assert len(ephemerals(local, demo.BOB)) == 1  # he already said what was wrong
        await local.slack.click(demo.ALICE, demo.GENERAL, up, message)
        await local.settle()
        assert local.standin.responses[-1]["text"] == THANKS
        # reactions on other messages and other emoji are not votes
        await reaction(local, "reaction_added", demo.DAN, "-1", {"ts": ts}, demo.GENERAL)
        await reaction(local, "reaction_added", demo.DAN, "tada", message, demo.GENERAL)
        assert len(ephemerals(local, demo.DAN)) == 1
        # a button of an answer the log doesn't know (expired): a clear private note, no form
        await local.slack.click(demo.EVE, demo.GENERAL, down | {"value": "0123456789abcdef"}, message)
        await local.settle()
        assert local.standin.responses[-1]["text"] == EXPIRED and len(local.standin.calls_to("views.open")) == 2
        assert len(local.standin.calls_to("chat.postMessage")) == 0  # nothing public

        denied = await local.slack.command(demo.BOB, demo.GENERAL, "feedback")
        assert denied.status == 200
        await local.settle()
        assert "Only the admins" in local.standin.responses[-1]["text"]
        await local.slack.command(demo.ALICE, demo.GENERAL, "feedback")
        await local.settle()
        assert answer_id in local.standin.responses[-1]["text"]
        votes = {f.user: f for f in await local.bot.services.answer_log.feedback(answer_id, active=False)}

    assert sorted(votes) == [demo.ALICE, demo.BOB, demo.DAN]
    assert (votes[demo.BOB].vote, votes[demo.BOB].reason, votes[demo.BOB].expected) == ("down", "outdated", expected)
    assert votes[demo.DAN].withdrawn and votes[demo.ALICE].vote == "up"

    # -- review: one candidate with what the answer used, promoted, replayed by the eval ---------
    monkeypatch.setenv("DOCSBOT_DATA_DIR", settings.data_dir)
    monkeypatch.setenv("DOCSBOT_DATABASE_URL", state_url)
    assert await asyncio.to_thread(eval_main, ["candidates", "--json"]) == 0  # it runs its own loop
    [candidate] = json.loads(capsys.readouterr().out)
    assert candidate["id"] == answer_id and candidate["question"] == VPN and candidate["level"] == "public"
    assert [v["user"] for v in candidate["votes"]] == [demo.BOB] and candidate["cause"] == "other"
    assert candidate["expected_docs"] == ["onboarding/vpn-setup.md"]
    assert candidate["retrieved"]
    assert all(r["doc_path"] and r["commit"] and r["text_hash"] for r in candidate["retrieved"])
    vpn = [r["version"] for r in candidate["retrieved"] if r["doc_path"] == "onboarding/vpn-setup.md"]
    assert vpn and set(vpn) == {"2.1"}  # the VPN doc's front matter
    golden = tmp_path / "golden_feedback.jsonl"
    promote = ["promote", answer_id, "--expect", "onboarding/vpn-setup.md", "--golden", str(golden)]
    assert await asyncio.to_thread(eval_main, promote) == 0
    (case,) = load_golden([golden])
    assert (case.question, case.level, case.gold_doc_ids) == (VPN, Level.public, ("onboarding/vpn-setup.md",))
    run = ["run", "--golden", str(golden), "--docs", str(SAMPLE_DOCS)]
    assert await asyncio.to_thread(runner.main, run, sample_engine, settings) == 0  # the runner has its own loop
