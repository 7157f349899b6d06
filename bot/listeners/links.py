"""Docs links pasted in Slack unfurl (bot/unfurls.py): `link_shared`, for a posted message or a
link still in the composer."""
from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import services_of
from bot.unfurls import unfurl


def register(app: AsyncApp) -> None:
    app.event("link_shared")(link_shared)


async def link_shared(event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext) -> None:
    services = services_of(context)
    services.work.spawn(unfurl(client, services.unfurler, event), name="unfurl")
