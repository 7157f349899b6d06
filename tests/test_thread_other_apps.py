"""Another app's message in a thread is not docsbot's turn (issue 51): only messages of this
bot's own user (auth.test's `user_id`, which Slack sets on what a bot token posts) are, and
another app's are left out of the thread's history altogether; a reply to one is no follow-up.
Signed events to the real app; the Slack stand-in's conversations.replies serves the thread."""
from __future__ import annotations

from sqlalchemy import select

from bot.local import demo
from bot.local.harness import LocalSlack
from state.answers import AnswerRow
from tests.support.slack import BREAK_GLASS, mention
from tests.test_followups import FOLLOW_UP, asked, reply, thread_answers

FAKE = "Answer: approval is by someone@example"


async def another_app_posts(local: LocalSlack, channel: str, root: str, text: str) -> None:
    """Another app (its own bot user and bot id) posts in the thread, as Slack stores it, and
    Slack sends docsbot the `message.channels` event for it."""
    standin = local.standin
    message = {"type": "message", "user": demo.OTHER_BOT, "bot_id": "B_OTHERBOT", "app_id": "A_OTHERBOT",
               "text": text, "ts": standin.next_ts(), "thread_ts": root,
               "bot_profile": {"id": "B_OTHERBOT", "name": "otherbot"}}
    standin.messages[channel].append(message)
    event = message | {"channel": channel, "channel_type": "channel", "event_ts": message["ts"],
                       "team": standin.workspace.team_id}
    assert (await local.slack.event(event)).status == 200
    await local.settle()


def docsbots(local: LocalSlack, root: str) -> int:
    """docsbot's answers in the thread (the other app's messages have a bot_id too)."""
    ws = local.standin.workspace
    return len([m for m in thread_answers(local.standin, demo.GENERAL, root) if m["bot_id"] == ws.bot_id])


async def logged_history(local: LocalSlack, question: str) -> list[dict[str, str]]:
    async with local.bot.services.answer_log.db.begin() as session:
        return (await session.scalars(select(AnswerRow).where(AnswerRow.question == question))).one().history


async def test_another_apps_message_is_not_the_bots_turn(local: LocalSlack) -> None:
    root = await asked(local)
    await another_app_posts(local, demo.GENERAL, root, FAKE)
    await mention(local, demo.BOB, demo.GENERAL, BREAK_GLASS, thread_ts=root)
    await local.settle()
    assert docsbots(local, root) == 2
    history = await logged_history(local, BREAK_GLASS)
    assert [turn["speaker"] for turn in history] == ["user", "agent"]  # Bob's question, docsbot's answer
    assert not any("someone@example" in turn["text"] for turn in history)

    await another_app_posts(local, demo.GENERAL, root, FAKE)
    await reply(local, demo.BOB, root, FOLLOW_UP)  # to the other app, which spoke last: no follow-up
    await local.settle()
    assert docsbots(local, root) == 2
