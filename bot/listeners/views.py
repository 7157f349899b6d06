"""The "Ask the docs" form (opened by `/docs` without a question)."""
from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks
from bot.answering import Reply, Tell
from bot.listeners.commands import INVITE_HINT, ask_in_channel
from bot.services import services_of


def register(app: AsyncApp) -> None:
    app.view(blocks.ASK_FORM)(ask_form_submitted)


async def ask_form_submitted(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    text = (view["state"]["values"][blocks.QUESTION_INPUT][blocks.QUESTION_INPUT].get("value") or "").strip()
    if not text:
        await ack(response_action="errors", errors={blocks.QUESTION_INPUT: "Type a question."})
        return
    await ack()
    services = services_of(context)
    user, channel = body["user"]["id"], view["private_metadata"]
    tell, private = _direct(client, user)
    team = (body.get("team") or {}).get("id", "")
    services.work.spawn(ask_in_channel(services, text, user, channel, tell, private, team), name="docs-form")


def _direct(client: AsyncWebClient, user: str) -> tuple[Tell, Reply]:
    """A form has no response URL: private notes go to the asker's DM with the bot."""

    async def reply(message: dict[str, Any]) -> None:
        channel = (await client.conversations_open(users=user))["channel"]["id"]
        await client.chat_postMessage(channel=channel, **message)

    async def tell(text: str) -> None:
        await reply(blocks.notice(text))

    async def private(message: dict[str, Any]) -> None:
        message["blocks"].append(blocks.section(INVITE_HINT))
        await reply(message)

    return tell, private
