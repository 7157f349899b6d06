"""Global Bolt middleware: attach the services, drop payloads the listeners could not read (after
one warning line), and drop Slack's retries of a delivered event."""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.followups import CHANNEL_TYPES
from bot.services import Services
from bot.shapes import payload_problem

log = logging.getLogger(__name__)

Middleware = Callable[..., Awaitable[BoltResponse | None]]


def attach(services: Services) -> Middleware:
    async def attach_services(context: AsyncBoltContext, next: Callable[[], Awaitable[Any]]) -> None:
        context["docsbot"] = services
        authorized = context.authorize_result  # Bolt's auth.test of the bot token, made before any listener
        if authorized is not None and authorized.bot_user_id:
            services.answerer.directory.installed_by(authorized.team_id or "", authorized.enterprise_id or "")
            services.answerer.bot_user_id = authorized.bot_user_id
        await next()

    return attach_services


async def drop_malformed(body: dict[str, Any], next: Callable[[], Awaitable[Any]]) -> BoltResponse | None:
    """A payload with a field missing or of the wrong type (bot.shapes) is acknowledged with 200
    (Slack would only retry an error) and goes no further: one WARNING naming the field, never
    its value (it may be someone's question)."""
    found = payload_problem(body)
    if found is not None:
        log.warning("Slack %s dropped: %s", *found)
        return BoltResponse(status=200, body="")
    await next()
    return None


def drop_retries(services: Services) -> Middleware:
    """A retry (`X-Slack-Retry-Num`) of an event some replica received before, even one still
    being answered, is acknowledged with 200 and goes no further (a 404 would bring more
    retries); a retry whose first delivery reached no replica is handled.

    Only a retry waits for the state database before its ack: a first delivery records its
    event id in the background (a retry comes seconds later, after Slack's 3 s ack timeout).

    A message in a channel is left to its listener: no event id is recorded for the many that are
    not follow-ups (a retry of one is recorded in docsbot's thread record once: bot/threads.py),
    and a follow-up claims its message, which a retry then finds taken."""

    async def drop_retried_events(
        body: dict[str, Any], request: AsyncBoltRequest, next: Callable[[], Awaitable[Any]]
    ) -> BoltResponse | None:
        event_id = body.get("event_id")
        retry = request.headers.get("x-slack-retry-num", [""])[0]
        if isinstance(event_id, str) and event_id and not _channel_message(body):
            if not retry:
                services.work.spawn(services.first_event(event_id), name="event-id")
            elif not await services.first_event(event_id):
                log.info("event %s delivered again (retry %s): already handled", event_id, retry)
                return BoltResponse(status=200, body="")
        await next()
        return None

    return drop_retried_events


def _channel_message(body: dict[str, Any]) -> bool:
    event = body.get("event")
    return isinstance(event, dict) and event.get("type") == "message" and event.get("channel_type") in CHANNEL_TYPES
