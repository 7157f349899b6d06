"""The App Home tab: what the bot can do for this person, at their level, and how current it is;
and the DM with docsbot opening in its agent view (`tab: messages`): its suggested prompts."""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import agent_view, blocks
from insights.candidates import find_candidates
from bot.digest import home_summary
from bot.listeners.commands import HELP
from bot.services import Services, services_of
from bot.suggestions import suggested_prompts
from rag import Level
from state.db import StateUnavailable

log = logging.getLogger(__name__)


def register(app: AsyncApp) -> None:
    app.event("app_home_opened")(home_opened)


async def home_opened(event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext) -> None:
    user = event.get("user")
    if not user:
        return
    services = services_of(context)
    if event.get("tab", "home") == "home":
        services.work.spawn(publish_home(services, client, user), name="app-home")
    elif event.get("tab") == "messages" and isinstance(event.get("channel"), str):
        services.work.spawn(_dm_opened(services, client, user, event["channel"]), name="agent-dm")


async def _dm_opened(services: Services, client: AsyncWebClient, user: str, dm: str) -> None:
    await agent_view.show_prompts(services, client, user, await agent_view.viewing(services, user), dm)


async def publish_home(services: Services, client: AsyncWebClient, user: str) -> None:
    level = await services.answerer.directory.user_level(user) or Level.public
    examples = [p["message"] for p in await suggested_prompts(services.answer_log, services.engine.store, level)]
    pending = None
    if services.policy.is_admin(user):
        try:
            downvoted = await services.answer_log.pending_downvoted(max_level=level)
            pending = len(await asyncio.to_thread(find_candidates, downvoted, services.engine.store))
        except StateUnavailable as exc:
            log.warning("the Home tab shows no feedback count: %s", exc)
    view = blocks.home_view(level.name, examples, HELP, await services.status(services.policy.is_admin(user)), pending)
    view["blocks"] += await home_summary(services, client, user)  # a docs owner's part of the gaps report
    try:
        await client.views_publish(user_id=user, view=view)
    except SlackApiError as exc:
        log.warning("could not publish the Home tab for %s: %s", user, exc.response.get("error"))
