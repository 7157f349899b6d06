"""Bad input at the bot's door, sent as Slack sends it (signed HTTP requests to the real aiohttp app,
the Slack stand-in behind it): a signed body nested too deep, events and forms with a field missing
or of the wrong type, an over-long question, a replayed command. Each is answered (400, or 200 and
dropped) with one warning line and never a traceback, and the bot keeps answering; `/docs status`
shows its details to admins alone, in lines that keep the code block whole."""
from __future__ import annotations

import errno
import json
import logging
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from bot.local import demo
from bot.blocks import ASK_FORM, QUESTION_INPUT
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import visible_text
from foundation.settings import Settings
from rag.engine import Engine
from rag.store.errors import IndexUnreadable, unreadable
from state.opening import open_state
from state.sync_status import SyncStatus

VPN = "how do I set up the VPN?"


@pytest.fixture
async def local(sample_engine: Engine, settings: Settings) -> AsyncIterator[LocalSlack]:
    async with local_slack(settings, sample_engine) as running:
        yield running


def posted(local: LocalSlack) -> list[dict[str, Any]]:
    return local.standin.calls_to("chat.postMessage")


async def still_answers(local: LocalSlack) -> None:
    """A well-formed mention after the bad input is answered in its thread."""
    before = len(posted(local))
    ts = local.standin.post_as_user(demo.GENERAL, demo.BOB, f"<@{local.standin.workspace.bot_user_id}> {VPN}")
    assert (await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, ts))).status == 200
    await local.settle()
    assert [p["thread_ts"] for p in posted(local)[before:]] == [ts]
    assert any("VPN" in visible_text(u) for u in local.standin.calls_to("chat.update", ok_only=True))


def warnings_about(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and text in r.getMessage()]


def no_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    assert "Traceback" not in caplog.text
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []


async def test_deeply_nested_signed_json_is_a_400_with_one_warning_line(
    local: LocalSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    bodies = [  # too deep for the JSON parser itself; parsed, but too deep for a reader that recurses
        ('{"type": "event_callback", "event": {"type": "app_mention", "x": ' + "[" * 100_000 + "]" * 100_000 + "}}",
         "application/json"),
        ('{"type": "event_callback", "event": ' + '{"event": ' * 500 + "{}" + "}" * 500 + "}", "application/json"),
        (urlencode({"payload": '{"type": "block_actions", "x": ' + "[" * 5000 + "]" * 5000 + "}"}),
         "application/x-www-form-urlencoded"),
        ('{"type": "event_callback", "event": {"type": "app_mention", "x": ' + "[" * 70 + "]" * 70 + "}}",
         "application/json"),
    ]
    for body, content_type in bodies:
        delivered = await local.slack.post(body, content_type)
        assert delivered.status == 400, delivered.body
    assert len(warnings_about(caplog, "not a Slack payload")) == len(bodies)
    no_tracebacks(caplog)
    await still_answers(local)


@pytest.mark.parametrize(("change", "field"), [
    ({"channel": None}, "`channel` is missing"),
    ({"ts": "abc"}, "`ts` is not a message timestamp"),
    ({"text": 5}, "`text` is not a string"),
    ({"thread_ts": ["1.0"]}, "`thread_ts` is not a message timestamp"),
])
async def test_a_mention_a_listener_could_not_read_is_dropped_with_one_warning(
    local: LocalSlack, caplog: pytest.LogCaptureFixture, change: dict[str, Any], field: str
) -> None:
    caplog.set_level(logging.WARNING)
    event = local.slack.mention(demo.BOB, demo.GENERAL, VPN, local.standin.next_ts()) | change
    event = {key: value for key, value in event.items() if value is not None}
    assert (await local.slack.event(event)).status == 200
    await local.settle()
    assert warnings_about(caplog, "dropped") == [f"Slack event app_mention dropped: {field}"]
    assert posted(local) == []
    no_tracebacks(caplog)
    await still_answers(local)


async def test_a_reaction_whose_item_is_a_list_is_dropped_with_one_warning(
    local: LocalSlack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    for kind in ("reaction_added", "reaction_removed"):
        event = {"type": kind, "user": demo.BOB, "reaction": "-1", "item": [{"channel": demo.GENERAL}],
                 "event_ts": local.standin.next_ts()}
        assert (await local.slack.event(event)).status == 200
    await local.settle()
    assert warnings_about(caplog, "dropped") == [f"Slack event {kind} dropped: `item` is not an object"
                                                 for kind in ("reaction_added", "reaction_removed")]
    no_tracebacks(caplog)
    await still_answers(local)


@pytest.mark.parametrize(("view", "field"), [
    ({"callback_id": ASK_FORM, "private_metadata": demo.GENERAL}, "`view.state` is missing"),
    ({"callback_id": ASK_FORM, "private_metadata": demo.GENERAL, "state": {"values": []}},
     "`view.state.values` is not an object of objects of objects"),
])
async def test_a_form_submitted_without_its_state_is_acknowledged_with_one_warning(
    local: LocalSlack, caplog: pytest.LogCaptureFixture, view: dict[str, Any], field: str
) -> None:
    caplog.set_level(logging.WARNING)
    delivered = await local.slack.interaction({
        "type": "view_submission", "user": {"id": demo.BOB}, "team": {"id": local.standin.workspace.team_id},
        "view": {"id": "V_FORM", "type": "modal", **view},
    })
    assert delivered.status == 200
    await local.settle()
    assert warnings_about(caplog, "dropped") == [f"Slack view_submission dropped: {field}"]
    # Without its channel, a form that is well formed otherwise is acknowledged and ignored too.
    values = {QUESTION_INPUT: {QUESTION_INPUT: {"type": "plain_text_input", "value": VPN}}}
    delivered = await local.slack.submit_view(demo.BOB, {"type": "modal", "callback_id": ASK_FORM}, values)
    await local.settle()
    assert delivered.status == 200 and warnings_about(caplog, "without its channel")
    assert posted(local) == []
    no_tracebacks(caplog)


async def test_an_over_long_question_is_told_the_limit_and_any_echo_fits_slack(local: LocalSlack) -> None:
    await local.slack.command(demo.BOB, demo.GENERAL, "how do I set up the VPN? " * 400)  # 9,999 once stripped
    await local.settle()
    [reply] = local.standin.responses
    assert "9,999 characters" in visible_text(reply) and "up to 2,000 characters" in visible_text(reply)
    assert reply["response_type"] == "ephemeral" and posted(local) == []

    # At the limit, a question of "&" escapes to five times its length: the "asked:" echo is cut to fit.
    question = "VPN setup " + "&" * 1990
    await local.slack.command(demo.BOB, demo.GENERAL, question)
    await local.settle()
    echo, placeholder = posted(local)
    assert echo["text"].startswith(f"<@{demo.BOB}> asked: VPN setup &amp;&amp;") and echo["text"].endswith("&amp;…")
    assert placeholder["thread_ts"] == local.standin.messages[demo.GENERAL][0]["ts"]
    assert all(call.ok for call in local.standin.calls if call.method == "chat.postMessage")


async def test_the_echo_of_a_command_notifies_nobody(local: LocalSlack) -> None:
    """`/docs @here @channel <!channel> #general …`: every block quoting it is verbatim (Slack does
    not turn a quoted @here into a mention) and Slack's own syntax in it is escaped."""
    await local.slack.command(demo.BOB, demo.GENERAL, "@here @channel <!channel> #general how do I set up the VPN?")
    await local.settle()
    echo = posted(local)[0]
    assert echo["text"] == f"<@{demo.BOB}> asked: @here @channel &lt;!channel&gt; #general how do I set up the VPN?"
    texts = [block["text"] for block in echo["blocks"] if block["type"] == "section"]
    assert texts and all(text.get("verbatim") is True for text in texts), texts


def asked(*replicas: LocalSlack) -> list[dict[str, Any]]:
    """The "<@user> asked: …" messages the replicas posted."""
    return [p for replica in replicas for p in posted(replica) if "asked:" in p["text"]]


async def test_a_replayed_command_is_acked_every_time_and_answered_once_across_replicas(
    sample_engine: Engine, settings: Settings,
) -> None:
    db = await open_state(f"sqlite:///{Path(settings.data_dir).parent / 'state.db'}")
    try:
        async with local_slack(settings, sample_engine, state=db) as first, \
                local_slack(settings, sample_engine, state=db) as second:
            body = first.slack.command_body(demo.BOB, demo.GENERAL, VPN)
            timestamp = str(int(time.time()))
            for replica in (first, second, first):  # the same signed request, three times
                delivered = await replica.slack.post(body, "application/x-www-form-urlencoded", timestamp=timestamp)
                assert delivered.status == 200
            await first.settle()
            await second.settle()
            assert len(asked(first, second)) == 1
            # A new command with the same text is a new request: answered.
            await second.slack.command(demo.BOB, demo.GENERAL, VPN)
            await second.settle()
            assert len(asked(first, second)) == 2
            # The "Ask the docs" form has no event id either: a replayed submission is answered once.
            values = {QUESTION_INPUT: {QUESTION_INPUT: {"type": "plain_text_input", "value": VPN}}}
            form = urlencode({"payload": json.dumps({
                "type": "view_submission", "user": {"id": demo.BOB}, "team": {"id": first.standin.workspace.team_id},
                "view": {"id": "V_FORM", "type": "modal", "callback_id": ASK_FORM, "private_metadata": demo.GENERAL,
                         "state": {"values": values}},
            })})
            for replica in (first, second):
                delivered = await replica.slack.post(form, "application/x-www-form-urlencoded", timestamp=timestamp)
                assert delivered.status == 200
            await first.settle()
            await second.settle()
            assert len(asked(first, second)) == 3
    finally:
        await db.close()


async def status_reply(local: LocalSlack, user: str) -> str:
    before = len(local.standin.responses)
    await local.slack.command(user, demo.GENERAL, "status")
    await local.settle()
    [reply] = local.standin.responses[before:]
    return visible_text(reply)


def assert_one_code_block(text: str, line_limit: int = 200) -> None:
    head, fence, rest = text.partition("```")
    body, fence_end, tail = rest.partition("```")
    assert (fence, fence_end, tail, "```" in body) == ("```", "```", "", False), text
    assert all(len(line) <= line_limit for line in body.splitlines()), [len(line) for line in body.splitlines()]


async def test_docs_status_shows_details_to_admins_only_in_lines_that_keep_the_code_block(
    sample_engine: Engine, settings: Settings,
) -> None:
    work_dir = str(Path(settings.data_dir).parent)
    state_file = Path(work_dir) / "state.db"
    db = await open_state(f"sqlite:///{state_file}")
    try:
        # A sync that failed on a full disk, its error 4 KB long, over many lines, with a fence in it.
        await SyncStatus(db).record(False, None, f"{disk_full(settings.data_dir)}\n```\n" + "lance trace " * 350)
        async with local_slack(settings, sample_engine, state=db) as local:
            guest, admin = await status_reply(local, demo.GUEST), await status_reply(local, demo.ALICE)
            assert "FAILED" in guest and "the server's disk is full" in guest and work_dir not in guest
            assert "the disk is full: free disk space, then sync again (the index at /" in admin
            for text in (guest, admin):
                assert_one_code_block(text)

            # The state database goes away: its address (here, a path in the work dir) is for admins.
            await db.engine.dispose()
            state_file.rename(state_file.with_suffix(".moved"))
            state_file.mkdir()
            try:
                guest, admin = await status_reply(local, demo.GUEST), await status_reply(local, demo.ALICE)
            finally:
                shutil.rmtree(state_file)
                state_file.with_suffix(".moved").rename(state_file)
            assert "the state database can't be reached" in guest and work_dir not in guest and "sqlite" not in guest
            assert str(state_file) in admin
            for text in (guest, admin):
                assert_one_code_block(text)
    finally:
        await db.close()


def disk_full(uri: str) -> str:
    """The error a write to a full disk gives inside the index (the kernel's own ENOSPC)."""
    with pytest.raises(IndexUnreadable) as raised, unreadable(uri), open("/dev/full", "w") as full:
        full.write("x")
        full.flush()
    assert raised.value.__cause__.errno == errno.ENOSPC
    return str(raised.value)


def test_a_full_disk_advises_freeing_disk_space_not_a_rebuild() -> None:
    advice = disk_full("/srv/docsbot/index")
    assert "free disk space" in advice and "--rebuild" not in advice
    with pytest.raises(IndexUnreadable, match="--rebuild"), unreadable("/srv/docsbot/index"):
        raise RuntimeError("LanceError(IO): Not found: /srv/docsbot/index/chunks.lance/data/x.lance")
