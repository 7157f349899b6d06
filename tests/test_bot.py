"""The Slack bot end to end: the real aiohttp app on a local port, requests signed as Slack signs
them, the Slack stand-in recording every Web API call, the real index and embedding model, and
the OpenAI stand-in where a model is needed."""
from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
import shutil
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.local import demo
from bot.blocks import ANSWER_IN_DM, FEEDBACK_DOWN, FEEDBACK_UP, QUOTED_CONTEXT, THINKING
from bot.deliveries import buttons
from bot.cli import sync_side
from bot.docs_sync import webhook_routes
from bot.local.harness import LocalSlack, local_slack
from bot.plan import TITLE_WORKING
from bot.local.standin import Failure, visible_text
from foundation.settings import Settings
from foundation.wiring import rag_config
from rag.engine import Engine
from state.opening import open_state
from state.sync_requests import SyncRequests
from tests.support.settings import SAMPLE_DOCS
from tests.support.slack import BREAK_GLASS, VPN, answers, mention, model_settings, with_model
from tests.support.waiting import until
from eval.standins.openai_server import Failure as OpenAIFailure
from eval.standins.openai_server import OpenAIStandIn


def updates(local: LocalSlack) -> list[dict[str, Any]]:
    """The edits that gave a placeholder its final form (a slow answer's plan, shown while it
    works, is progress: bot/plan.py)."""
    return [u for u in local.standin.calls_to("chat.update", ok_only=True)
            if [b.get("title") for b in u.get("blocks") or [] if b.get("type") == "plan"] != [TITLE_WORKING]]


async def test_mention_in_channel_answers_in_the_thread_with_cited_sources(local: LocalSlack) -> None:
    ts, ack_s = await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.settle()
    placeholder = local.standin.calls_to("chat.postMessage")[0]
    assert placeholder["thread_ts"] == ts and placeholder["text"] == THINKING
    [update] = updates(local)
    assert update["ts"] == local.standin.messages[demo.GENERAL][1]["ts"]
    text = visible_text(update)
    assert "VPN Setup" in text and "[1]" in text and "v2.1" in text
    assert [b["action_id"] for b in buttons(update)] == [FEEDBACK_UP, FEEDBACK_DOWN]
    assert update["text"]  # the notification fallback is always set
    assert ack_s < 1.0


async def test_feedback_button_thanks_privately(local: LocalSlack) -> None:
    await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.settle()
    [update] = updates(local)
    up = buttons(update)[0]
    answer_id = up["value"]
    logged = await local.bot.services.answer_log.get(answer_id)
    indexed = local.bot.services.engine.store.meta()["commit"]
    assert logged.question == VPN and indexed and logged.index_commit == indexed
    delivered = await local.slack.click(demo.BOB, demo.GENERAL, up, update)
    await local.settle()
    assert delivered.status == 200
    assert local.standin.responses[-1]["text"] == "Thanks for the feedback!"
    assert local.standin.responses[-1]["response_type"] == "ephemeral"


async def test_follow_up_in_a_thread_uses_the_earlier_messages(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: "Roll back with the documented procedure [1]."
    async with local_slack(settings, with_model(sample_engine, model_settings(settings, openai_standin))) as local:
        root, _ = await mention(local, demo.BOB, demo.ENG, "how do I roll back a bad deploy?")
        await local.settle()
        await mention(local, demo.BOB, demo.ENG, "and who has to approve it?", thread_ts=root)
        await local.settle()
        assert local.standin.calls_to("conversations.replies") == []  # docsbot's record of the thread
        prompt = openai_standin.requests[-1][1]["messages"][-1]["content"]
        assert "<thread>" in prompt and "user: how do I roll back a bad deploy?" in prompt
        assert "agent: Roll back with the documented procedure [1]." in prompt
        assert "Looking through" not in prompt
        assert all(p["thread_ts"] == root for p in local.standin.calls_to("chat.postMessage"))


async def test_slash_command_posts_the_question_and_answers_in_its_thread(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: "Set it up from the VPN portal [1]."
    openai_standin.delay_s = 3.5  # slower than Slack's 3-second deadline
    async with local_slack(settings, with_model(sample_engine, model_settings(settings, openai_standin))) as local:
        delivered = await local.slack.command(demo.BOB, demo.GENERAL, VPN)
        assert delivered.status == 200 and delivered.seconds < 3.0
        await local.settle()
        question, placeholder = local.standin.calls_to("chat.postMessage")
        assert question["text"] == f"<@{demo.BOB}> asked: {VPN}" and "thread_ts" not in question
        root = local.standin.messages[demo.GENERAL][0]["ts"]
        assert placeholder["thread_ts"] == root
        assert "Set it up from the VPN portal [1]." in visible_text(updates(local)[0])


async def test_slash_command_help_and_status(local: LocalSlack) -> None:
    await local.slack.command(demo.EVE, demo.GENERAL, "help")
    await local.slack.command(demo.EVE, demo.GENERAL, "status")
    await local.settle()
    help_text, status = (visible_text(r) for r in local.standin.responses)
    assert "/docs status" in help_text and "@docsbot" in help_text
    assert "documents: 23" in status
    assert all(r["response_type"] == "ephemeral" for r in local.standin.responses)


async def test_docs_sync_is_for_admins_and_requests_a_sync_that_the_worker_runs(
    sample_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    settings = settings.model_copy(update={"docs_dir": str(docs), "sync_interval_minutes": 60})
    engine = dataclasses.replace(sample_engine, config=rag_config(settings))
    async with sync_side(settings, engine, with_worker=True) as side, \
            local_slack(settings, engine, run_sync=side.command, state=side.db) as local:
        await local.slack.command(demo.BOB, demo.GENERAL, "sync")
        await local.settle()
        assert "Only the admins" in local.standin.responses[-1]["text"]

        async def nothing_pending() -> bool:
            return await side.requests.pending() == 0

        await until(nothing_pending)  # the worker's first (scheduled) sync is done
        (docs / "parking.md").write_text("# Parking\n\nVisitors park on level -2.\n")
        started, requested_at = time.monotonic(), time.time()
        await local.slack.command(demo.ALICE, demo.GENERAL, "sync")
        await local.settle()
        assert "Sync requested" in visible_text(local.standin.responses[-1])
        assert time.monotonic() - started < 2  # answered at once, not after the sync
        await until(nothing_pending)
        await local.slack.command(demo.ALICE, demo.GENERAL, "status")
        await local.settle()
        status = visible_text(local.standin.responses[-1])
        assert "documents: 24" in status and "requests waiting: 0" in status
        # A sync ended after the request (the folder watcher may have added the file just before it).
        last_sync = re.search(r"last sync: ok at (\S+)", status)
        assert last_sync and datetime.fromisoformat(last_sync.group(1)).timestamp() >= requested_at - 1


async def test_slash_command_without_a_question_opens_a_form_that_asks(local: LocalSlack) -> None:
    await local.slack.command(demo.BOB, demo.GENERAL, "")
    await local.settle()
    [opened] = local.standin.calls_to("views.open", ok_only=True)
    view = opened["view"]
    values = {"question": {"question": {"type": "plain_text_input", "value": VPN}}}
    delivered = await local.slack.submit_view(demo.BOB, view, values)
    await local.settle()
    assert delivered.status == 200
    assert local.standin.calls_to("chat.postMessage")[0]["text"] == f"<@{demo.BOB}> asked: {VPN}"
    assert "VPN Setup" in visible_text(updates(local)[0])


async def test_direct_message_is_answered_at_the_askers_level(local: LocalSlack) -> None:
    dm = local.standin.dm_channel(demo.ALICE)
    ts = local.standin.post_as_user(dm, demo.ALICE, BREAK_GLASS)
    await local.slack.event(local.slack.direct_message(demo.ALICE, dm, BREAK_GLASS, ts))
    await local.settle()
    [update] = updates(local)
    assert update["channel"] == dm and "Break-Glass" in visible_text(update)


async def test_messages_that_are_not_a_persons_dm_are_ignored(local: LocalSlack) -> None:
    dm = local.standin.dm_channel(demo.ALICE)
    edited = local.slack.direct_message(demo.ALICE, dm, VPN, local.standin.next_ts()) | {"subtype": "message_changed"}
    from_bot = local.slack.direct_message(demo.OTHER_BOT, dm, VPN, local.standin.next_ts()) | {"bot_id": "B_OTHER"}
    in_channel = local.slack.direct_message(demo.BOB, demo.GENERAL, VPN, local.standin.next_ts()) | {
        "channel_type": "channel"}
    for event in (edited, from_bot, in_channel):
        assert (await local.slack.event(event)).status == 200
    await local.settle()
    assert not local.standin.calls_to("chat.postMessage")


async def test_guest_gets_public_answers_only(local: LocalSlack) -> None:
    """The guest's email domain would make them `team`; being a guest makes them public."""
    dm = local.standin.dm_channel(demo.GUEST)
    question = "how does the on-call rotation and handover work?"
    ts = local.standin.post_as_user(dm, demo.GUEST, question)
    await local.slack.event(local.slack.direct_message(demo.GUEST, dm, question, ts))
    await local.settle()
    text = visible_text(updates(local)[0])
    assert "On-Call Handbook" not in text
    assert (await local.bot.services.answer_log.get(buttons(updates(local)[0])[0]["value"])).level == "public"


async def test_restricted_answer_goes_to_a_dm_never_to_the_public_channel(local: LocalSlack) -> None:
    await mention(local, demo.ALICE, demo.GENERAL, BREAK_GLASS)
    await local.settle()
    [in_channel] = answers(local, demo.GENERAL)
    assert "Break-Glass" not in visible_text(in_channel) and "tp-prod-db" not in visible_text(in_channel)
    assert "above your access level" in visible_text(in_channel)
    [offer] = local.standin.calls_to("chat.postEphemeral", ok_only=True)
    assert offer["user"] == demo.ALICE and "public channel" in offer["text"]
    [button] = buttons(offer)
    assert button["action_id"] == ANSWER_IN_DM
    await local.slack.click(demo.ALICE, demo.GENERAL, button, offer)
    await local.settle()
    assert local.standin.calls_to("conversations.open")[-1]["users"] == demo.ALICE
    dm = local.standin.dm_channel(demo.ALICE)
    [in_dm] = answers(local, dm)
    assert "Break-Glass" in visible_text(in_dm)
    assert "Break-Glass" not in " ".join(visible_text(m) for m in answers(local, demo.GENERAL))


async def test_dm_offer_still_works_after_a_restart(sample_engine: Engine, settings: Settings) -> None:
    async with local_slack(settings, sample_engine) as local:
        await mention(local, demo.ALICE, demo.GENERAL, BREAK_GLASS)
        await local.settle()
        [offer] = local.standin.calls_to("chat.postEphemeral", ok_only=True)
    [button] = buttons(offer)
    async with local_slack(settings, sample_engine) as local:  # a new process, same data dir
        await local.slack.click(demo.ALICE, demo.GENERAL, button, offer)
        await local.settle()
        [in_dm] = answers(local, local.standin.dm_channel(demo.ALICE))
        assert "Break-Glass" in visible_text(in_dm)


async def test_slack_connect_channel_is_public(local: LocalSlack) -> None:
    """#partners is shared with another organisation; everyone in it on our side is restricted."""
    await mention(local, demo.DAN, demo.PARTNERS, BREAK_GLASS)
    await local.settle()
    [answer] = answers(local, demo.PARTNERS)
    assert "Break-Glass" not in visible_text(answer)
    assert "shared with another organisation" in local.standin.calls_to("chat.postEphemeral")[0]["text"]


async def test_a_retried_event_is_answered_once_even_while_the_first_is_running(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: "Use the VPN portal [1]."
    openai_standin.delay_s = 3.5
    async with local_slack(settings, with_model(sample_engine, model_settings(settings, openai_standin))) as local:
        ts, first_ack = await mention(local, demo.BOB, demo.GENERAL, VPN, event_id="Ev_ONCE")
        assert first_ack < 3.0  # acknowledged although the model takes 3.5 s
        await asyncio.sleep(0.3)
        assert local.bot.services.work.pending == 1  # still answering
        event = local.slack.mention(demo.BOB, demo.GENERAL, VPN, ts)
        for retry in (1, 2):
            delivered = await local.slack.event(event, "Ev_ONCE", retry=retry)
            assert delivered.status == 200 and delivered.seconds < 1.0
        await local.settle()
        assert len(local.standin.calls_to("chat.postMessage")) == 1
        assert len(updates(local)) == 1
        assert len([r for r in openai_standin.requests if r[0].endswith("chat/completions")]) == 1


async def test_ai_service_down_quotes_the_docs_instead(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    """Issue 54 item 3: a model that fails is no silence and no 'try again': the docs' own words."""
    openai_standin.failures = [OpenAIFailure(503, {"retry-after": "30"})]
    async with local_slack(settings, with_model(sample_engine, model_settings(settings, openai_standin))) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        [update] = [u for u in updates(local) if not all(b.get("type") == "plan" for b in u.get("blocks") or [])]
        text = visible_text(update)
        assert QUOTED_CONTEXT in text and "WireGuard" in text and "The AI service is unavailable" not in text
        assert [b["action_id"] for b in buttons(update)] == [FEEDBACK_UP, FEEDBACK_DOWN]


async def test_per_user_rate_limit_answers_with_a_friendly_note(sample_engine: Engine, settings: Settings) -> None:
    settings = settings.model_copy(update={"bot_user_questions_per_minute": 2})
    async with local_slack(settings, dataclasses.replace(sample_engine, config=rag_config(settings))) as local:
        for _ in range(3):
            await mention(local, demo.BOB, demo.GENERAL, VPN)
        await mention(local, demo.EVE, demo.GENERAL, VPN)  # another person is not limited
        await local.settle()
        assert len(updates(local)) == 3
        [note] = local.standin.calls_to("chat.postEphemeral")
        assert note["user"] == demo.BOB and "You've asked 2 questions in the last minute" in note["text"]


async def test_slack_rate_limit_is_retried_after_retry_after(local: LocalSlack) -> None:
    local.standin.fail_next("chat.postMessage", Failure("ratelimited", status=429, retry_after=0))
    await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.settle()
    assert [c.ok for c in local.standin.calls if c.method == "chat.postMessage"] == [False, True]
    assert "VPN Setup" in visible_text(updates(local)[0])


async def test_failed_user_lookup_means_public(local: LocalSlack) -> None:
    local.standin.fail_next("users.info", Failure("fatal_error"))
    dm = local.standin.dm_channel(demo.ALICE)
    ts = local.standin.post_as_user(dm, demo.ALICE, BREAK_GLASS)
    await local.slack.event(local.slack.direct_message(demo.ALICE, dm, BREAK_GLASS, ts))
    await local.settle()
    text = visible_text(updates(local)[0])
    assert "Break-Glass" not in text and "above your access level" in text


async def test_slash_command_where_the_bot_is_not_invited_answers_privately(local: LocalSlack) -> None:
    await local.slack.command(demo.BOB, demo.RANDOM, VPN)
    await local.settle()
    assert [c.ok for c in local.standin.calls if c.method == "chat.postMessage"] == [False]
    [reply] = local.standin.responses
    assert reply["response_type"] == "ephemeral"
    text = visible_text(reply)
    assert "/invite @docsbot" in text and "VPN Setup" in text


async def test_model_output_cannot_ping_or_link_and_long_answers_fit_slack(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    hostile = "<!channel> <@U_ALICE> see <https://evil.example|the docs> & more [1]. "
    openai_standin.reply = lambda messages: hostile + ("All of this is in the VPN guide [1]. " * 600)
    async with local_slack(settings, with_model(sample_engine, model_settings(settings, openai_standin))) as local:
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        [update] = updates(local)  # the stand-in enforces Slack's limits: accepted means it fits
        assert len(update["blocks"]) <= 50
        assert all(len(b["text"]["text"]) <= 3000 for b in update["blocks"] if b["type"] == "section")
        posted = visible_text(update) + update["text"]
        assert "<!channel>" not in posted and "<@U_ALICE>" not in posted and "<https://evil" not in posted
        assert "&lt;!channel&gt;" in posted and "&amp; more" in posted


async def test_tokens_and_secrets_never_reach_the_log(local: LocalSlack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    local.standin.fail_next("users.info", Failure("fatal_error"))
    await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.slack.post("{broken", "application/json")
    await local.settle()
    assert caplog.text and demo.TOKEN not in caplog.text and demo.SIGNING_SECRET not in caplog.text


async def test_a_private_note_slack_refuses_is_logged_and_dropped(
    local: LocalSlack, caplog: pytest.LogCaptureFixture
) -> None:
    local.standin.fail_next("chat.postEphemeral", Failure("user_not_in_channel"))
    await mention(local, demo.BOB, demo.GENERAL, "")  # an empty mention gets a private hint
    await local.settle()
    assert f"could not send a private note in {demo.GENERAL}: user_not_in_channel" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


async def test_signatures_timestamps_and_bodies_are_checked(local: LocalSlack) -> None:
    body = local.slack.event_body(local.slack.mention(demo.BOB, demo.GENERAL, VPN, "1.000001"))
    bad_signature = await local.slack.post(body, "application/json", secret="not-the-secret")
    stale = await local.slack.post(body, "application/json", timestamp=str(int(time.time()) - 600))
    malformed = await local.slack.post("{this is not json", "application/json")
    malformed_unsigned = await local.slack.post("{this is not json", "application/json", secret="nope")
    not_an_object = await local.slack.post('["a", "list"]', "application/json")
    assert (bad_signature.status, stale.status, malformed.status) == (401, 401, 400)
    assert (malformed_unsigned.status, not_an_object.status) == (401, 400)
    await local.settle()
    assert not local.standin.calls_to("chat.postMessage")
    async with local.slack.session.get(local.base_url + "/healthz") as response:  # still serving
        assert response.status == 200 and (await response.json())["ok"] is True
    ts, _ = await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.settle()
    assert len(updates(local)) == 1


async def test_the_signature_is_checked_once_before_bolt(local: LocalSlack) -> None:
    """The web handler's check is the only one: Bolt's own dispatch takes an unsigned request."""
    challenge = '{"type": "url_verification", "challenge": "c-once", "token": "x"}'
    unsigned = AsyncBoltRequest(body=challenge, headers={"content-type": "application/json"})
    response = await local.bot.app.async_dispatch(unsigned)
    assert response.status == 200 and "c-once" in response.body
    assert (await local.slack.post(challenge, "application/json", secret="nope")).status == 401


async def test_url_verification_challenge_is_answered(local: LocalSlack) -> None:
    """Slack checks the Request URL with a signed url_verification challenge."""
    delivered = await local.slack.post('{"type": "url_verification", "challenge": "c-123", "token": "x"}',
                                       "application/json")
    assert delivered.status == 200 and "c-123" in delivered.body


async def test_a_retry_is_dropped_by_its_event_id_before_any_listener_runs(local: LocalSlack) -> None:
    """The retry here carries another message ts, so only the event-id check can recognise it."""
    ts, _ = await mention(local, demo.BOB, demo.GENERAL, VPN, event_id="Ev_SAME")
    await local.settle()  # a retry comes after Slack's 3 s ack timeout
    later = local.standin.post_as_user(demo.GENERAL, demo.BOB, VPN)
    delivered = await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, later), "Ev_SAME", retry=1)
    await local.settle()
    assert delivered.status == 200
    assert [p["thread_ts"] for p in local.standin.calls_to("chat.postMessage")] == [ts]


async def test_a_dm_mention_delivered_as_two_events_is_answered_once(local: LocalSlack) -> None:
    dm = local.standin.dm_channel(demo.BOB)
    text = f"<@{local.standin.workspace.bot_user_id}> {VPN}"
    ts = local.standin.post_as_user(dm, demo.BOB, text)
    await local.slack.event(local.slack.direct_message(demo.BOB, dm, text, ts))
    await local.slack.event(local.slack.mention(demo.BOB, dm, VPN, ts))
    await local.settle()
    [update] = updates(local)
    assert "VPN Setup" in visible_text(update)


async def test_the_git_webhook_is_served_by_the_bots_http_app(
    sample_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    settings = settings.model_copy(update={"webhook_secret": SecretStr("hook-secret")})
    db = await open_state(f"sqlite:///{tmp_path / 'state.db'}")
    routes = webhook_routes(settings, SyncRequests(db))
    async with local_slack(settings, sample_engine, routes=routes) as local:
        async with local.slack.session.post(local.base_url + "/hooks/git", data=b"{}",
                                            headers={"X-Hub-Signature-256": "sha256=0"}) as response:
            assert response.status == 401  # mounted, and checking signatures
    await db.close()
