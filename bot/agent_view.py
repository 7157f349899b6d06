"""docsbot's agent view (the manifest's `features.agent_view`, Slack's messaging experience for
AI apps since 2026; the older `features.assistant_view` panel is bot/listeners/assistant.py).

While the agent view is open Slack tells docsbot what the person looks at (`app_context_changed`,
entities ordered by relevance: a channel, or a message in one). That channel sets what the next
answer in their DM with docsbot is for: its scope (the access file's `scope`) and its readers
(the answer's level is the lower of theirs and the channel's audience, so it can be pasted there),
and the answer says so. Looking at nothing (an empty context), the DM answers as a DM does: at
their own level, from every document. Either way the DM's suggested prompts follow: the questions
answered this week in public channels from that channel's documents, then one per docs area in
its scope, at the level the answer would use.

What a person looks at is kept in the state database for a day (state/agent_views.py), shared by
the replicas: it is a channel id, never a message.
"""
from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.services import Services
from bot.suggestions import WEEK_S, suggested_prompts
from rag import Level
from state.db import StateUnavailable

log = logging.getLogger(__name__)

PROMPTS_TITLE = "Questions people ask"
CHANNEL, MESSAGE = "slack#/types/channel_id", "slack#/types/message_context"


def viewed_channel(event: dict[str, Any]) -> str:
    """The most relevant channel of an `app_context_changed` event's context ("" for none)."""
    context = event.get("context")
    entities = context.get("entities") if isinstance(context, dict) else None
    for entity in entities if isinstance(entities, list) else []:
        value = entity.get("value") if isinstance(entity, dict) else None
        if entity.get("type") == CHANNEL and isinstance(value, str):
            return value
        if entity.get("type") == MESSAGE and isinstance(value, dict) and isinstance(value.get("channel_id"), str):
            return str(value["channel_id"])
    return ""


def viewer(event: dict[str, Any], body: dict[str, Any]) -> str:
    """Who looks: the event's `user`, else the person the envelope's authorizations name."""
    if isinstance(event.get("user"), str) and event["user"]:
        return str(event["user"])
    people = [a for a in body.get("authorizations") or [] if isinstance(a, dict) and not a.get("is_bot")]
    return str(people[0].get("user_id") or "") if people else ""


async def viewing(services: Services, user: str) -> str:
    """The channel `user` looks at in the agent view ("" for none, or when it cannot be read)."""
    try:
        return await services.agent_views.get(user)
    except StateUnavailable as exc:
        log.warning("answering a DM for the DM alone: %s", exc)
        return ""


async def context_changed(services: Services, client: AsyncWebClient, user: str, channel: str,
                          dm: str = "") -> None:
    """`user` looks at `channel` now: kept for their next answer, and their DM's prompts follow."""
    try:
        await services.agent_views.set(user, channel)
    except StateUnavailable as exc:
        log.warning("the channel viewed was not recorded: %s", exc)
    await show_prompts(services, client, user, channel, dm)


async def show_prompts(services: Services, client: AsyncWebClient, user: str, channel: str, dm: str = "") -> None:
    """Suggested prompts in `user`'s DM with docsbot for what they look at (`channel`, or none)."""
    level = await services.answerer.directory.user_level(user) or Level.public
    scope = None
    if channel:
        level = (await services.answerer.directory.audience(channel, level)).cap(level)
        scope = services.policy.rules(channel).scope
    prompts = await suggested_prompts(services.answer_log, services.engine.store, level, scope, WEEK_S)
    if not prompts:
        return
    try:
        dm = dm or (await client.conversations_open(users=user))["channel"]["id"]
        await client.assistant_threads_setSuggestedPrompts(channel_id=dm, prompts=prompts, title=PROMPTS_TITLE)
    except SlackApiError as exc:
        log.info("could not set the agent view's prompts: %s", exc.response.get("error"))
