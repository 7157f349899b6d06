"""A Slack conversation read as a question: the message's text without the bot's mention, and
the thread's earlier turns as untrusted context for a follow-up."""
from __future__ import annotations

import logging
import re
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks

log = logging.getLogger(__name__)

History = list[tuple[str, str]]
_HISTORY_MESSAGES = 12
_HISTORY_CHARS = 1000


def question_text(slack_text: str, bot_user_id: str | None) -> str:
    """The question in a message: without the bot's mention, Slack's escapes undone."""
    if bot_user_id:
        slack_text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", slack_text)
    return " ".join(slack_text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").split())


async def thread_history(
    client: AsyncWebClient, channel: str, thread_ts: str, before_ts: str, bot_user_id: str | None
) -> History:
    """The thread's earlier messages as (speaker, text): untrusted context for a follow-up.

    A failed lookup gives no history (the question is answered on its own)."""
    return history_of(await thread_messages(client, channel, thread_ts), before_ts, bot_user_id)


async def thread_messages(client: AsyncWebClient, channel: str, thread_ts: str) -> list[dict[str, Any]]:
    """The thread's messages as Slack gives them, oldest first; none when the lookup fails."""
    try:
        response = await client.conversations_replies(channel=channel, ts=thread_ts, limit=100)
    except SlackApiError as exc:
        log.warning("conversations.replies %s failed: %s", channel, exc.response.get("error"))
        return []
    messages: list[dict[str, Any]] = response.get("messages", [])
    return messages


def from_the_bot(message: dict[str, Any], bot_user_id: str | None) -> bool:
    """Whether this bot posted `message`: Slack sets `user` to the poster's bot user (auth.test's
    `user_id`) on everything a bot token posts. Any app's message has a `bot_id`; only ours has our user."""
    return bot_user_id is not None and message.get("user") == bot_user_id


def _from_another_app(message: dict[str, Any], bot_user_id: str | None) -> bool:
    by_an_app = bool(message.get("bot_id")) or message.get("subtype") == "bot_message"
    return by_an_app and not from_the_bot(message, bot_user_id)


def history_of(messages: list[dict[str, Any]], before_ts: str, bot_user_id: str | None) -> History:
    """The messages before `before_ts` as (speaker, text), placeholders left out, the last few.
    Another app's messages are left out too: not the bot's turns, and no person wrote them."""
    history: History = []
    for message in messages:
        if float(message.get("ts", 0)) >= float(before_ts) or _from_another_app(message, bot_user_id):
            continue
        is_bot = from_the_bot(message, bot_user_id)
        if is_bot and blocks.is_placeholder(message.get("text", "")):
            continue
        if text := question_text(message.get("text", ""), bot_user_id):
            history.append(("agent" if is_bot else "user", text[:_HISTORY_CHARS]))
    return history[-_HISTORY_MESSAGES:]
