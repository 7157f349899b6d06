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
    """An event id some replica received before (a retry, even one arriving while the first
    delivery is still being answered) is acknowledged with 200 and goes no further: a 404 would
    bring more retries. A retry whose first delivery reached no replica is handled."""

    async def drop_retried_events(
        body: dict[str, Any], request: AsyncBoltRequest, next: Callable[[], Awaitable[Any]]
    ) -> BoltResponse | None:
        event_id = body.get("event_id")
        if isinstance(event_id, str) and event_id and not await services.first_event(event_id):
            retry = request.headers.get("x-slack-retry-num", ["?"])[0]
            log.info("event %s delivered again (retry %s): already handled", event_id, retry)
            return BoltResponse(status=200, body="")
        await next()
        return None

    return drop_retried_events
