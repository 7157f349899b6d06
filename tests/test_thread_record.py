"""docsbot's own record of its threads (issue 52 item 4): follow-ups and mentions in a thread it
answered in read their context there, not from Slack's conversations.replies. Signed
`message.channels` events (plain, `message_changed`, `message_deleted`, as Slack's reference
shows them) to the real aiohttp app; the Slack stand-in counts the history calls."""
from __future__ import annotations

import time

import pytest
from sqlalchemy import func, select

from bot.conversation import history_of
from bot.local import demo
from bot.local.harness import LocalSlack
from state.answers import AnswerRow
from state.opening import open_state
from state.threads import Posted, ThreadMessageRow, ThreadRecord, asked_or_answered_in_thread
from tests.support.slack import VPN, mention
from tests.test_followups import FOLLOW_UP, asked, reply, thread_answers

FOLLOW_UPS = ["and what if it works at home but not in a hotel?", "and what if the handshake never completes?",
              "how do I undo that?", "and for the EU office?", "what about the hotel wifi?"]


def replies_calls(local: LocalSlack) -> int:
    return len(local.standin.calls_to("conversations.replies"))


async def logged(local: LocalSlack, question: str) -> AnswerRow:
    async with local.bot.services.answer_log.db.begin() as session:
        return (await session.scalars(select(AnswerRow).where(AnswerRow.question == question))).one()


async def recorded_messages(local: LocalSlack) -> int:
    async with local.bot.services.threads.db.begin() as session:
        return int(await session.scalar(select(func.count()).select_from(ThreadMessageRow)) or 0)


def as_slack_gives_it(local: LocalSlack, root: str, before_ts: str) -> list[dict[str, str]]:
    """The history Slack's conversations.replies would have given for the message `before_ts`."""
    thread = [m for m in local.standin.messages[demo.GENERAL] if root in (m["ts"], m.get("thread_ts"))]
    turns = history_of(sorted(thread, key=lambda m: float(m["ts"])), before_ts, local.standin.workspace.bot_user_id)
    return [{"speaker": speaker, "text": text} for speaker, text in turns]


async def test_follow_ups_in_a_thread_docsbot_answered_cost_no_slack_history_call(local: LocalSlack) -> None:
    """Before: each follow-up read the thread from Slack (5 follow-ups, 5 calls); now none, and
    each gets the same thread context Slack would have given."""
    root = await asked(local)
    for text in FOLLOW_UPS:
        ts = await reply(local, demo.BOB, root, text)
        await local.settle()
        assert (await logged(local, text)).history == as_slack_gives_it(local, root, ts)
    assert len(thread_answers(local.standin, demo.GENERAL, root)) == 1 + len(FOLLOW_UPS)
    assert replies_calls(local) == 0


async def test_a_mention_in_a_thread_docsbot_answered_reads_no_history_either(local: LocalSlack) -> None:
    root = await asked(local)
    await reply(local, demo.BOB, root, "I'm on the hotel wifi")  # a statement: recorded, not answered
    await local.settle()
    ts, _ = await mention(local, demo.DAN, demo.GENERAL, "who approves break-glass access?", thread_ts=root)
    await local.settle()
    history = (await logged(local, "who approves break-glass access?")).history
    assert history == as_slack_gives_it(local, root, ts) and history[-1]["text"] == "I'm on the hotel wifi"
    assert replies_calls(local) == 0


async def test_a_thread_docsbot_joins_late_is_read_from_slack_once(local: LocalSlack) -> None:
    """Eve's thread, where docsbot is mentioned later: Slack is read for that mention only, and
    what it gave is recorded, so the follow-up after it costs no call."""
    root = local.standin.post_as_user(demo.GENERAL, demo.EVE, "the VPN portal rejects my login since Monday")
    await reply(local, demo.DAN, root, "same here, it started after the password change")
    await local.settle()
    assert await recorded_messages(local) == 0  # a thread docsbot takes no part in: nothing stored
    ts, _ = await mention(local, demo.BOB, demo.GENERAL, VPN, thread_ts=root)
    await local.settle()
    assert replies_calls(local) == 1
    assert (await logged(local, VPN)).history == as_slack_gives_it(local, root, ts)
    follow_up = await reply(local, demo.BOB, root, FOLLOW_UP)
    await local.settle()
    assert replies_calls(local) == 1
    history = (await logged(local, FOLLOW_UP)).history
    assert history == as_slack_gives_it(local, root, follow_up)
    assert history[0]["text"] == "the VPN portal rejects my login since Monday"


async def test_an_edit_and_a_deletion_in_slack_are_made_in_the_record(local: LocalSlack) -> None:
    root = await asked(local)
    ts = await reply(local, demo.BOB, root, "my laptop is on the hotel wifi")
    await local.settle()
    edited = {"type": "message", "subtype": "message_changed", "hidden": True, "channel": demo.GENERAL,
              "channel_type": "channel", "ts": local.standin.next_ts(), "event_ts": local.standin.next_ts(),
              "message": {"type": "message", "user": demo.BOB, "text": "my laptop is on the office wifi", "ts": ts,
                          "thread_ts": root, "edited": {"user": demo.BOB, "ts": local.standin.next_ts()}},
              "previous_message": {"type": "message", "user": demo.BOB, "text": "my laptop is on the hotel wifi",
                                   "ts": ts, "thread_ts": root}}
    assert (await local.slack.event(edited)).status == 200
    await local.settle()
    assert (await local.bot.services.threads.messages(demo.GENERAL, root) or [])[-1]["text"] == \
        "my laptop is on the office wifi"
    deleted = {"type": "message", "subtype": "message_deleted", "hidden": True, "channel": demo.GENERAL,
               "channel_type": "channel", "ts": local.standin.next_ts(), "event_ts": local.standin.next_ts(),
               "deleted_ts": ts, "previous_message": edited["message"]}
    assert (await local.slack.event(deleted)).status == 200
    await local.settle()
    recorded = await local.bot.services.threads.messages(demo.GENERAL, root) or []
    assert ts not in [m["ts"] for m in recorded] and len(recorded) == 2  # the question and its answer


async def test_the_record_is_kept_as_long_as_the_answer_log(state_url: str) -> None:
    now = [1_800_000_000.0]
    db = await open_state(state_url)
    try:
        record = ThreadRecord(db, retention_days=90, clock=lambda: now[0])
        await record.start("C1", "1.000001", [Posted("1.000001", "U1", "how do I set up the VPN?")])
        now[0] += 89 * 86_400
        assert await record.note("C1", "1.000001", Posted("1.000002", "U_BOT", "See VPN Setup [1]"))
        assert not await record.note("C1", "9.000001", Posted("9.000002", "U1", "not a thread docsbot keeps"))
        now[0] += 2 * 86_400  # the question is 91 days old, the answer 2
        assert await record.prune() == 1
        assert [m["ts"] for m in await record.messages("C1", "1.000001") or []] == ["1.000002"]
        now[0] += 89 * 86_400
        assert await record.prune() == 1
        assert await record.messages("C1", "1.000001") is None  # quiet for the whole retention: gone
        assert await ThreadRecord(db, retention_days=0, clock=lambda: now[0] * 10).prune() == 0
    finally:
        await db.close()


@pytest.mark.parametrize("message, kept", [
    ({"ts": "1.1", "user": "U1", "text": "hi"}, {"ts": "1.1", "user": "U1", "text": "hi"}),
    ({"ts": "1.2", "user": "U_BOT", "bot_id": "B_BOT", "text": "answer"},
     {"ts": "1.2", "user": "U_BOT", "text": "answer"}),
    ({"ts": "1.3", "user": "U_OTHER", "bot_id": "B_OTHER", "text": "fake answer"},
     {"ts": "1.3", "user": "U_OTHER", "text": "", "bot_id": "B_OTHER"}),
    ({"ts": "1.4", "subtype": "bot_message", "text": "a webhook's"},
     {"ts": "1.4", "user": "", "text": "", "bot_id": "app"}),
])
def test_another_apps_text_is_never_kept(message: dict[str, str], kept: dict[str, str]) -> None:
    assert Posted.of(message, "U_BOT").as_slack() == kept


async def test_a_question_docsbot_took_lets_its_asker_follow_up_before_the_answer_is_posted(state_url: str) -> None:
    """What the follow-up check reads on every replica: a question docsbot took (marked as it
    starts answering) counts like a posted answer, and stays marked when another replica records
    the same message again unmarked (Slack's retry, the `message` event of a mention)."""
    db = await open_state(state_url)
    try:
        record, now_ms = ThreadRecord(db), int(time.time() * 1000)
        await record.start("C1", "1.000001", [Posted("1.000001", "U1", "how do I set up the VPN?", question=True)])
        await record.note("C1", "1.000001", Posted("1.000001", "U1", "how do I set up the VPN?"))
        await record.note("C1", "1.000001", Posted("1.000002", "U2", "what about the hotel wifi?"))
        assert await asked_or_answered_in_thread(db, "C1", "1.000001", "U1", now_ms - 60_000)
        assert not await asked_or_answered_in_thread(db, "C1", "1.000001", "U2", now_ms - 60_000)  # never asked
        assert not await asked_or_answered_in_thread(db, "C1", "1.000001", "U1", now_ms + 60_000)  # past the window
        assert not await asked_or_answered_in_thread(db, "C2", "1.000001", "U1", now_ms - 60_000)
    finally:
        await db.close()
