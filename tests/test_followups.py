"""Follow-ups in a channel thread without a mention (bot/followups.py): signed `message` events as
Slack sends them for `message.channels`, to the real aiohttp app with the Slack stand-in and the
real index, and with two real `docsbot serve` replicas on Postgres."""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import delete, func, select, update

from bot.access import load_access, parse_access
from bot.answering import THREAD_UNREAD
from bot.app import EVENTS_PATH
from bot.blocks import is_placeholder
from bot.deliveries import SlackDeliveries
from bot.followups import reads_as_question
from bot.local import demo
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import Failure, SlackStandIn
from eval.bench_acks import free_port, serve_env, start_bot
from foundation.settings import Settings
from rag import Level
from rag.engine import Engine
from state.answers import AnswerRow
from state.dedupe import DedupeKey
from state.threads import ThreadMessageRow, ThreadRow
from eval.standins.openai_server import OpenAIStandIn
from tests.support.slack import VPN, mention, model_settings, with_model
from tests.support.waiting import until

FOLLOW_UP = "and what if it works at home but not in a hotel?"


def thread_answers(standin: SlackStandIn, channel: str, root: str) -> list[dict[str, Any]]:
    """The bot's messages in the thread `root` as they read now (placeholders left out)."""
    return [m for m in standin.messages.get(channel, [])
            if m.get("bot_id") and m.get("thread_ts") == root and not is_placeholder(m["text"])]


async def reply(local: LocalSlack, user: str, root: str, text: str, event_id: str | None = None,
                retry: int = 0, channel: str = demo.GENERAL) -> str:
    """`user` writes `text` in the thread `root` (no mention); Slack sends it as `message.channels`
    (`message.groups` in a private channel)."""
    ts = local.standin.post_as_user(channel, user, text, root)
    kind = "group" if local.standin.workspace.channels[channel].get("is_private") else "channel"
    delivered = await local.slack.event(local.slack.thread_message(user, channel, text, ts, root, kind), event_id,
                                        retry)
    assert delivered.status == 200 and delivered.seconds < 1.0
    return ts


async def asked(local: LocalSlack) -> str:
    """Bob asks @docsbot about the VPN in #general: the thread the follow-ups go in."""
    root, _ = await mention(local, demo.BOB, demo.GENERAL, VPN)
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 1
    return root


async def dedupe_keys(local: LocalSlack) -> int:
    async with local.bot.services.dedupe.db.begin() as session:
        return int(await session.scalar(select(func.count()).select_from(DedupeKey)) or 0)


async def test_a_follow_up_from_the_asker_is_answered_in_the_thread_with_it_as_context(local: LocalSlack) -> None:
    root = await asked(local)
    await reply(local, demo.BOB, root, FOLLOW_UP)
    await local.settle()
    first, second = thread_answers(local.standin, demo.GENERAL, root)
    assert "VPN" in first["text"] and "tcp-fallback" in second["text"]
    async with local.bot.services.answer_log.db.begin() as session:
        logged = (await session.scalars(select(AnswerRow).where(AnswerRow.question == FOLLOW_UP))).one()
    assert logged.thread_ts == root and logged.asker == demo.BOB
    assert [turn["speaker"] for turn in logged.history] == ["user", "agent"]  # the thread, as context
    assert VPN in logged.history[0]["text"]


async def test_messages_that_are_not_follow_ups_are_dropped_unclaimed_and_unlogged(
    local: LocalSlack, caplog: pytest.LogCaptureFixture
) -> None:
    root = await asked(local)
    keys = await dedupe_keys(local)
    calls = len(local.standin.calls)
    caplog.clear()
    await reply(local, demo.BOB, root, "thanks!")
    await reply(local, demo.BOB, root, "got it 👍")
    await reply(local, demo.BOB, root, "I set it up yesterday")
    await reply(local, demo.BOB, root, f"<@{demo.DAN}> how do I get my travel expenses back?")
    await reply(local, demo.BOB, root, "<!here> how do I get my travel expenses back?")
    await reply(local, demo.EVE, root, "how do I get my travel expenses back?")  # not the asker
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 1
    assert await dedupe_keys(local) == keys  # nothing claimed, no event id recorded (only docsbot's thread record)
    assert local.standin.calls[calls:] == []  # not even the thread was read
    assert not [r for r in caplog.records if r.name.startswith(("docsbot", "bot"))]  # nor logged


async def test_a_reply_to_someone_else_in_the_thread_is_not_answered(local: LocalSlack) -> None:
    root = await asked(local)
    await reply(local, demo.BOB, root, FOLLOW_UP)
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 2
    await reply(local, demo.EVE, root, "I had that too, the hotel wifi blocks it")  # Slack sends it to docsbot too
    await local.settle()
    await reply(local, demo.BOB, root, "which hotel was it?")  # to Eve, who wrote last
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 2


async def test_no_follow_up_after_the_window(local: LocalSlack) -> None:
    root = await asked(local)
    await reply(local, demo.BOB, root, FOLLOW_UP)  # within the window
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 2
    hours = local.bot.services.settings.followup_hours
    window_ms = int(hours * 3_600_000) + 1
    async with local.bot.services.answer_log.db.begin() as session:  # both asked and answered a window ago
        await session.execute(update(AnswerRow).values(created_ms=AnswerRow.created_ms - window_ms))
        await session.execute(update(ThreadMessageRow).values(created_ms=ThreadMessageRow.created_ms - window_ms))
    await reply(local, demo.BOB, root, "and what if the handshake never completes?")
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 2


async def test_follow_ups_past_the_rate_limit_never_read_the_thread(local: LocalSlack) -> None:
    """12 follow-ups at once from one person (issue 51 item 2): only those within the per-person
    limit (6 a minute, the first question included) cause a conversations.replies call."""
    root = await asked(local)
    for n in range(12):
        await reply(local, demo.BOB, root, f"and what if it fails on attempt {n}?")
    await local.settle()
    answered = len(thread_answers(local.standin, demo.GENERAL, root)) - 1
    told = [c for c in local.standin.calls_to("chat.postEphemeral") if "questions in the last minute" in c["text"]]
    assert answered == local.bot.services.settings.bot_user_questions_per_minute - 1 and len(told) == 12 - answered
    assert len(local.standin.calls_to("conversations.replies")) <= answered


async def test_a_retried_follow_up_is_answered_once(local: LocalSlack) -> None:
    root = await asked(local)
    ts = await reply(local, demo.BOB, root, FOLLOW_UP, event_id="Ev_FOLLOW")
    await local.settle()
    event = local.slack.thread_message(demo.BOB, demo.GENERAL, FOLLOW_UP, ts, root)
    for retry in (1, 2):
        delivered = await local.slack.event(event, "Ev_FOLLOW", retry=retry)
        assert delivered.status == 200
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 2


async def test_a_follow_up_written_while_the_first_answer_is_being_written_is_answered(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    """Bob follows up while docsbot still writes its first answer (a 3 s model: the placeholder
    shows its plan). Before: dropped unsaid, as only a logged answer made its author's replies
    follow-ups (the two-replica test below met it under load)."""
    openai_standin.reply = lambda messages: "Use the VPN portal [1]."
    openai_standin.delay_s = 3.0
    settings = model_settings(settings, openai_standin, llm_stream=False)
    async with local_slack(settings, with_model(sample_engine, settings)) as local:
        root, _ = await mention(local, demo.BOB, demo.GENERAL, VPN)
        await until(lambda: any(m.get("bot_id") and m.get("thread_ts") == root
                                for m in local.standin.messages[demo.GENERAL]), 30, "no placeholder")
        assert thread_answers(local.standin, demo.GENERAL, root) == []  # still being written
        await reply(local, demo.BOB, root, FOLLOW_UP)
        await local.settle()
        assert len(thread_answers(local.standin, demo.GENERAL, root)) == 2
        async with local.bot.services.answer_log.db.begin() as session:
            logged = (await session.scalars(select(AnswerRow).where(AnswerRow.question == FOLLOW_UP))).one()
        assert logged.thread_ts == root and VPN in logged.history[0]["text"]


async def test_a_follow_up_whose_thread_cannot_be_read_is_told_so(
    local: LocalSlack, caplog: pytest.LogCaptureFixture
) -> None:
    """A thread docsbot answered in but keeps no record of (answered before the record existed),
    and Slack failing conversations.replies: whether the reply was for docsbot is unknown, so it
    is not answered, and its author is told so (privately), with a log line."""
    root = await asked(local)
    async with local.bot.services.threads.db.begin() as session:
        await session.execute(delete(ThreadMessageRow))
        await session.execute(delete(ThreadRow))
    local.standin.fail_next("conversations.replies", Failure())
    await reply(local, demo.BOB, root, FOLLOW_UP)
    await local.settle()
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 1
    [told] = local.standin.calls_to("chat.postEphemeral")
    assert told["user"] == demo.BOB and told["thread_ts"] == root and told["text"] == THREAD_UNREAD
    assert any("could not be read" in r.getMessage() for r in caplog.records)


async def test_the_access_file_turns_follow_ups_off_in_a_channel(
    sample_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    access = tmp_path / "access.toml"
    access.write_text(demo.ACCESS_FILE.read_text() + f"\n[channels.{demo.GENERAL}]\nfollowups = false\n")
    async with local_slack(settings, sample_engine, policy=load_access(access)) as local:
        for channel, answers in ((demo.GENERAL, 1), (demo.ENG, 2)):  # off in #general, on in #eng
            root, _ = await mention(local, demo.BOB, channel, VPN)
            await local.settle()
            await reply(local, demo.BOB, root, FOLLOW_UP, channel=channel)
            await local.settle()
            assert len(thread_answers(local.standin, channel, root)) == answers, channel


def test_follow_ups_are_on_unless_a_channel_says_otherwise() -> None:
    policy = parse_access({"channels": {"C_ENG": "team", "C_OPS": {"followups": False, "level": "team"}}})
    assert policy.rules("C_ENG").followups and not policy.rules("C_OPS").followups
    assert policy.channels == {"C_ENG": Level.team, "C_OPS": Level.team}


@pytest.mark.parametrize("text, asks", [
    ("and for staging?", True), ("and for staging", True), ("what about the EU region", True),
    ("how do I undo that", True), ("show me the config", True), ("ok, and if the handshake fails?", True),
    ("Is this still right?", True), ("thanks!", False), ("Thank you so much :pray:", False), ("got it 👍", False),
    ("ok", False), ("really?", False), ("makes sense, thanks", False), ("I set it up yesterday", False),
    ("the portal was down for me", False), ("?", False),
])
def test_what_reads_as_a_question_to_the_bot(text: str, asks: bool) -> None:
    assert reads_as_question(text) is asks


@pytest.mark.timeout(300)
async def test_two_replicas_answer_a_follow_up_once(sample_engine: Engine, settings: Settings,
                                                     postgres_url: str) -> None:
    """Replica A answers Bob's question. His follow-up reaches replica B while A still writes that
    answer (B knows it from docsbot's shared record of the thread), and Slack's retry of it A; a
    second one, once both are answered, reaches A and its retry B while A answers it. Each is
    answered once."""
    model = OpenAIStandIn().start()
    model.reply = lambda messages: "Claim them in the expenses tool [1]."
    model.delay_s = 1.5
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    procs = []
    async with aiohttp.ClientSession() as http:
        try:
            slack = {}
            for name in ("A", "B"):
                port = free_port()
                env = serve_env(standin, model, port, str(settings.data_dir)) | {
                    "DOCSBOT_DATABASE_URL": postgres_url, "DOCSBOT_BOT_USER_QUESTIONS_PER_MINUTE": "100"}
                procs.append(await start_bot(env, f"http://127.0.0.1:{port}"))
                ws = standin.workspace
                slack[name] = SlackDeliveries(http, f"http://127.0.0.1:{port}{EVENTS_PATH}", demo.SIGNING_SECRET,
                                              ws.team_id, ws.bot_user_id, standin.response_url)
            root = standin.post_as_user(demo.GENERAL, demo.BOB, f"<@{standin.workspace.bot_user_id}> {VPN}")
            assert (await slack["A"].event(slack["A"].mention(demo.BOB, demo.GENERAL, VPN, root))).status == 200
            await until(lambda: any(m.get("bot_id") and m.get("thread_ts") == root
                                    for m in standin.messages[demo.GENERAL]), 60, "no placeholder")
            assert thread_answers(standin, demo.GENERAL, root) == []  # A is still writing the first answer
            for n, (first, then) in enumerate((("B", "A"), ("A", "B")), 1):
                text = FOLLOW_UP if n == 1 else "and what if the handshake never completes?"
                ts = standin.post_as_user(demo.GENERAL, demo.BOB, text, root)
                event = slack[first].thread_message(demo.BOB, demo.GENERAL, text, ts, root)
                delivered = await slack[first].event(event, f"Ev_TWICE_{n}")
                await asyncio.sleep(0.5)
                again = await slack[then].event(event, f"Ev_TWICE_{n}", retry=1)
                assert delivered.status == again.status == 200
                await until(lambda: len(thread_answers(standin, demo.GENERAL, root)) == 1 + n, 60,
                            f"follow-up {n} not answered")
            await asyncio.sleep(4)  # time for another answer, were one coming
            answers = thread_answers(standin, demo.GENERAL, root)
            assert len(answers) == 3  # the question's, then each follow-up's (the second may be an abstention)
            assert all("Claim them in the expenses tool" in a["text"] for a in answers[:2])
        finally:
            for proc in procs:
                proc.terminate()
                await proc.wait()
            await standin.stop()
            model.stop()
