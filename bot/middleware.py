"""Global Bolt middleware: attach the services, and drop Slack's retries of a delivered event."""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.services import Services

log = logging.getLogger(__name__)

Middleware = Callable[..., Awaitable[BoltResponse | None]]


def attach(services: Services) -> Middleware:
    async def attach_services(context: AsyncBoltContext, next: Callable[[], Awaitable[Any]]) -> None:
        context["docsbot"] = services
        await next()

    return attach_services


def drop_retries(services: Services) -> Middleware:
    """A retry (`X-Slack-Retry-Num`) of an event some replica received before, even one still
    being answered, is acknowledged with 200 and goes no further (a 404 would bring more
    retries); a retry whose first delivery reached no replica is handled.

    Only a retry waits for the state database before its ack: a first delivery records its
    event id in the background (a retry comes seconds later, after Slack's 3 s ack timeout)."""

    async def drop_retried_events(
        body: dict[str, Any], request: AsyncBoltRequest, next: Callable[[], Awaitable[Any]]
    ) -> BoltResponse | None:
        event_id = body.get("event_id")
        retry = request.headers.get("x-slack-retry-num", [""])[0]
        if event_id and not retry:
            services.work.spawn(services.first_event(event_id), name="event-id")
        elif event_id and not await services.first_event(event_id):
            log.info("event %s delivered again (retry %s): already handled", event_id, retry)
            return BoltResponse(status=200, body="")
        await next()
        return None

    return drop_retried_events
