"""Private notes: what only the asker sees (help, busy, "please try again", an answer the bot may
not post in the conversation), whichever way it reaches them.

The way depends on where the question came from: an ephemeral message in the conversation (a
mention, a reaction), the response URL of a command or button, the asker's DM with the bot (a
form has neither), or a conversation only the asker reads (their DM, the assistant panel's
thread). A note Slack refuses is logged and dropped, the same way for all of them: it never
fails the work that sends it (an answer is still logged, a vote still counted).
"""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.webhook.webhook_response import WebhookResponse

from bot import blocks

log = logging.getLogger(__name__)

Tell = Callable[[str], Awaitable[None]]  # a private note to the asker
Reply = Callable[[dict[str, Any]], Awaitable[None]]  # a whole message only the asker sees


@dataclass(frozen=True)
class Notes:
    """Notes to one person, each one Slack call of `send`; `where` names the way in the log."""

    send: Callable[[dict[str, Any]], Awaitable[object]]
    where: str

    async def reply(self, message: dict[str, Any]) -> None:
        try:
            sent = await self.send(message)
        except SlackApiError as exc:
            log.warning("could not send a private note %s: %s", self.where, exc.response.get("error"))
            return
        if isinstance(sent, WebhookResponse) and sent.status_code != 200:  # a response URL answers, never raises
            log.warning("could not send a private note %s: HTTP %d %s", self.where, sent.status_code, sent.body)

    async def tell(self, text: str) -> None:
        await self.reply(blocks.notice(text))


def ephemeral(client: AsyncWebClient, channel: str, user: str, thread_ts: str | None = None) -> Notes:
    """Shown to `user` alone in the conversation (in the thread `thread_ts`, if any)."""
    return Notes(lambda message: client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts,
                                                           **message), f"in {channel}")


def by_response_url(respond: AsyncRespond) -> Notes:
    """Through the response URL of a command or an interaction (kept beside the original message)."""
    return Notes(lambda message: respond(response_type="ephemeral", replace_original=False, **message),
                 "by the response URL")


def in_conversation(client: AsyncWebClient, channel: str, thread_ts: str | None = None) -> Notes:
    """Posted in a conversation only the asker reads: their DM with the bot, or the assistant panel's thread."""
    return Notes(lambda message: client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message),
                 f"in {channel}")


def in_dm(client: AsyncWebClient, user: str) -> Notes:
    """In the asker's DM with the bot, opened first (a form has no response URL)."""

    async def send(message: dict[str, Any]) -> None:
        channel = (await client.conversations_open(users=user))["channel"]["id"]
        await client.chat_postMessage(channel=channel, **message)

    return Notes(send, f"in the DM with {user}")
