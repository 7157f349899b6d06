"""A Slack conversation read as a question: the message's text without the bot's mention, and
the thread's earlier turns as untrusted context for a follow-up.

A thread is read from docsbot's own record of it (state/threads.py) when it keeps one; Slack
(`conversations.replies`) is asked only for a thread it does not, and what Slack gives is then
copied into the record, so the thread's next message needs no Slack call."""
from __future__ import annotations

import logging
import re
from dataclasses import replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks
from state.db import StateUnavailable
from state.threads import Posted, ThreadRecord

log = logging.getLogger(__name__)

History = list[tuple[str, str]]
_HISTORY_MESSAGES = 12
_HISTORY_CHARS = 1000
# One page of conversations.replies. An app distributed outside the Marketplace gets at most 15
# messages a call (and 1 call a minute) since 2025; internal and Marketplace apps up to 1000.
_SLACK_PAGE = 100


class ThreadUnreadable(RuntimeError):
    """Neither docsbot's record of a thread nor Slack could be read (each said why in a log line)."""


def question_text(slack_text: str, bot_user_id: str | None) -> str:
    """The question in a message: without the bot's mention, Slack's escapes undone."""
    if bot_user_id:
        slack_text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", slack_text)
    return " ".join(slack_text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").split())


async def thread_history(
    client: AsyncWebClient, record: ThreadRecord, channel: str, thread_ts: str, before_ts: str,
    bot_user_id: str | None,
) -> History:
    """The thread's earlier messages as (speaker, text): untrusted context for a question asked
    there. A failed lookup gives no history (the question is answered on its own)."""
    messages = await thread_messages(client, record, channel, thread_ts, before_ts, bot_user_id)
    return history_of(messages or [], before_ts, bot_user_id)


async def thread_messages(
    client: AsyncWebClient, record: ThreadRecord, channel: str, thread_ts: str, before_ts: str,
    bot_user_id: str | None,
) -> list[dict[str, Any]] | None:
    """The messages of the thread docsbot was asked the question `before_ts` in, oldest first:
    from docsbot's record when it keeps one, else from Slack (then recorded from the message
    `before_ts` needs for its history on, that question marked as one); None when neither can
    be read (one log line each)."""
    try:
        recorded = await record.messages(channel, thread_ts)
    except StateUnavailable as exc:
        log.warning("the thread record is unavailable, reading %s from Slack: %s", channel, exc)
        read = await _from_slack(client, channel, thread_ts)
        return None if read is None else read[0]
    if recorded is not None:
        return recorded
    read = await _from_slack(client, channel, thread_ts)
    if read is None:
        return None
    messages, whole = read
    if messages and whole:
        kept = messages[_start_of_history(messages, before_ts, bot_user_id):]
        try:
            await record.start(channel, thread_ts, [
                replace(Posted.of(m, bot_user_id), question=m.get("ts") == before_ts) for m in kept])
        except StateUnavailable as exc:
            log.warning("thread in %s not recorded: %s", channel, exc)
    return messages


async def _from_slack(
    client: AsyncWebClient, channel: str, thread_ts: str
) -> tuple[list[dict[str, Any]], bool] | None:
    """The thread's first page as Slack gives it, oldest first (None when the lookup fails), and
    whether that is the whole thread (a longer one is never recorded: its latest messages are not
    in its first page)."""
    try:
        response = await client.conversations_replies(channel=channel, ts=thread_ts, limit=_SLACK_PAGE)
    except SlackApiError as exc:
        log.warning("conversations.replies %s failed: %s", channel, exc.response.get("error"))
        return None
    messages: list[dict[str, Any]] = response.get("messages", [])
    return messages, not response.get("has_more")


def _start_of_history(messages: list[dict[str, Any]], before_ts: str, bot_user_id: str | None) -> int:
    """Where the messages a history before `before_ts` can use begin: its last turns' first."""
    turns = [i for i, m in enumerate(messages)
             if float(m.get("ts", 0)) < float(before_ts) and history_of([m], before_ts, bot_user_id)]
    return turns[-_HISTORY_MESSAGES] if len(turns) >= _HISTORY_MESSAGES else 0


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
