"""docsbot's agent view (bot/agent_view.py): what a person looks at (`app_context_changed`); the
DM itself opening is `app_home_opened` with `tab: messages` (bot/listeners/home.py)."""
from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot import agent_view
from bot.services import services_of


def register(app: AsyncApp) -> None:
    app.event("app_context_changed")(app_context_changed)


async def app_context_changed(event: dict[str, Any], body: dict[str, Any], client: AsyncWebClient,
                              context: AsyncBoltContext) -> None:
    user = agent_view.viewer(event, body)
    if user:
        dm = event.get("channel") if str(event.get("channel") or "").startswith("D") else ""
        services = services_of(context)
        services.work.spawn(agent_view.context_changed(services, client, user, agent_view.viewed_channel(event),
                                                       str(dm or "")), name="agent-context")
