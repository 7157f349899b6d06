"""The "Ask the docs" form (opened by `/docs` without a question)."""
from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks
from bot.listeners.commands import ask_in_channel, replay_key, with_invite_hint
from bot.notes import in_dm
from bot.services import services_of

log = logging.getLogger(__name__)


def register(app: AsyncApp) -> None:
    app.view(blocks.ASK_FORM)(ask_form_submitted)


async def ask_form_submitted(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext,
    request: AsyncBoltRequest,
) -> None:
    """The form's shape is checked before (bot.shapes); its question input and channel may still be
    missing (a form that is not ours): acknowledged, with one warning line."""
    value = (view["state"]["values"].get(blocks.QUESTION_INPUT) or {}).get(blocks.QUESTION_INPUT, {}).get("value")
    text = value.strip() if isinstance(value, str) else ""
    channel = view.get("private_metadata") or ""
    if not channel:
        log.warning("ask form submitted without its channel: ignored")
        await ack()
        return
    if not text:
        await ack(response_action="errors", errors={blocks.QUESTION_INPUT: "Type a question."})
        return
    await ack()
    services = services_of(context)
    user = body["user"]["id"]
    notes = in_dm(client, user)  # a form has no response URL
    team = (body.get("team") or {}).get("id", "")
    digest = replay_key(request)

    async def ask() -> None:
        if await services.first_request(digest):
            await ask_in_channel(services, text, user, channel, notes.tell, with_invite_hint(notes.reply), team)
        else:
            log.warning("a replayed ask form submission (same signature, timestamp and body) dropped")

    services.work.spawn(ask(), name="docs-form")
