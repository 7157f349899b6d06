"""Mentions in channels and threads, direct messages to the bot, follow-ups in the threads of a
channel it answered in (bot/followups.py), and the messages of the threads docsbot keeps a
record of (bot/threads.py)."""
from __future__ import annotations

import logging
from functools import partial
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot import agent_view, followups, surfaces, threads
from bot.answering import NotInChannel, Question, ThreadReader
from bot.conversation import question_text, thread_history
from bot.notes import ephemeral
from bot.services import Services, services_of
from bot.surfaces import Surface

log = logging.getLogger(__name__)

EMPTY_MENTION = ("Ask me a question about the docs, e.g. `@docsbot how do I roll back a deploy?` "
                 "(`/docs help` for more).")


def register(app: AsyncApp) -> None:
    app.event("app_mention")(app_mention)
    app.event("message")(direct_message)


async def app_mention(event: dict[str, Any], context: AsyncBoltContext, client: AsyncWebClient) -> None:
    services = services_of(context)
    if _from_a_person(event):
        root = event.get("thread_ts") or event["ts"]
        services.work.spawn(_answer(services, client, event, root, context.bot_user_id), name="mention")


async def direct_message(event: dict[str, Any], context: AsyncBoltContext, client: AsyncWebClient) -> None:
    """Every `message` event lands here (an unhandled one would make Bolt answer 404); only a
    person's new message in a DM with the bot is answered, at the top level or in its thread,
    and a follow-up in a channel thread. A message in a channel thread, an edit and a deletion
    are recorded when docsbot keeps that thread's record. Any other message is dropped here, unread."""
    services = services_of(context)
    if threads.in_a_thread(event) and (event.get("channel_type") in followups.CHANNEL_TYPES
                                       or event.get("subtype") is not None):
        services.work.spawn(_in_a_thread(services, client, event, context.bot_user_id), name="thread-message")
        return
    if event.get("channel_type") != "im" or event.get("subtype") or not _from_a_person(event):
        return
    services.work.spawn(_answer(services, client, event, event.get("thread_ts"), context.bot_user_id), name="dm")


def _from_a_person(event: dict[str, Any]) -> bool:
    return bool(event.get("user")) and not event.get("bot_id")


async def _in_a_thread(
    services: Services, client: AsyncWebClient, event: dict[str, Any], bot_user_id: str | None
) -> None:
    """Recorded when its thread's record is kept; then answered when it is a follow-up."""
    await threads.seen(services.threads, event, bot_user_id)
    if followups.candidate(event) and await followups.may_follow_up(services, event):
        await _answer(services, client, event, event["thread_ts"], bot_user_id, surfaces.FOLLOWUP)


async def _answer(
    services: Services, client: AsyncWebClient, event: dict[str, Any], root: str | None, bot_user_id: str | None,
    way_in: Surface | None = None,
) -> None:
    """A message in a thread is answered with the thread as context, read once its author is
    within the rate limit; a follow-up (`way_in`) whose thread shows it answers someone else is dropped."""
    channel, user = event["channel"], event["user"]
    if not await services.first_delivery(channel, event["ts"]):  # claimed here, so `work.idle()` covers it
        return
    tell = ephemeral(client, channel, user, root).tell
    text = question_text(event.get("text") or "", bot_user_id)
    await threads.took(services.threads, event, bot_user_id)
    if not text:
        await tell(EMPTY_MENTION)
        return
    thread: ThreadReader | None = None
    if way_in is surfaces.FOLLOWUP:
        thread = partial(followups.follow_up_history, client, services.threads, event, bot_user_id)
    elif root is not None and event.get("thread_ts"):
        thread = partial(thread_history, client, services.threads, channel, root, event["ts"], bot_user_id)
    try:
        team = event.get("user_team") or event.get("team") or ""
        # a DM answers for the channel its asker looks at in docsbot's agent view, if any
        viewing = await agent_view.viewing(services, user) if event.get("channel_type") == "im" else ""
        await services.answerer.answer_in_conversation(Question(text, user, channel, root, team=team, viewing=viewing),
                                                       tell, way_in, thread)
    except NotInChannel as exc:
        log.warning("cannot post in %s (%s)", channel, exc)
