"""Socket Mode that says what is wrong once, instead of a traceback every few seconds.

Slack's SDK retries a connection it cannot open forever, logging each failure with its traceback
(216 lines in 30 s with Slack unreachable, issue 24). Here the connection is opened in the
background with a growing backoff, and a line is logged only when the condition changes (what
failed, when the next try is, what to check); the SDK's own messages go through a filter that
keeps each one once and drops its traceback.
"""
from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from slack_sdk.errors import SlackApiError

log = logging.getLogger(__name__)
BACKOFF_S = (2.0, 5.0, 10.0, 30.0, 60.0)
_VARYING = re.compile(r"\(.*?\)|s_\d+|\d+")  # session ids, addresses, counts: the same condition


class OncePerCondition(logging.Filter):
    """Each distinct warning or error once, without its traceback, until a session is established
    again; the SDK's info lines (sessions opened and abandoned) not at all."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if "has been established" in message:
            self.seen.clear()
        if record.levelno < logging.WARNING:  # session chatter: keep_connecting says what matters
            return False
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        condition = _VARYING.sub("", message)
        if condition in self.seen:
            return False
        self.seen.add(condition)
        return True


def sdk_logger() -> logging.Logger:
    """The logger to hand Slack's Socket Mode client."""
    logger = logging.getLogger("docsbot.slack_socket_mode")
    if not any(isinstance(f, OncePerCondition) for f in logger.filters):
        logger.addFilter(OncePerCondition())
    return logger


def condition(exc: BaseException, api_url: str) -> tuple[str, str]:
    """(what failed, what to check) for a failed apps.connections.open."""
    if isinstance(exc, SlackApiError):
        return (f"Slack refused apps.connections.open: {exc.response.get('error')}",
                "check SLACK_APP_TOKEN: an app-level token (xapp-…) with connections:write, Socket Mode enabled")
    return (f"cannot reach {api_url} ({type(exc).__name__})",
            "check outbound HTTPS to slack.com and wss-primary.slack.com, a proxy, or SLACK_API_URL")


async def keep_connecting(handler: Any) -> None:
    """Open `handler`'s (a Bolt AsyncSocketModeHandler) connection, retrying with backoff until it
    opens or the handler is closed; then the SDK keeps it open (and reconnects) itself."""
    client = handler.client
    attempt, last = 0, ""
    while not client.closed:
        try:
            client.wss_uri = await client.issue_new_wss_url()
        except Exception as exc:  # an unreachable host, a refused token, a timeout: all retried
            what, check = condition(exc, client.web_client.base_url)
            delay = BACKOFF_S[min(attempt, len(BACKOFF_S) - 1)]
            if what != last:
                log.error("Socket Mode: %s; retrying in %.0f s, then every %.0f s at most (%s)",
                          what, delay, BACKOFF_S[-1], check)
                last = what
            attempt += 1
            await asyncio.sleep(delay)
            continue
        if last:
            log.info("Socket Mode: connected after %d attempts", attempt + 1)
        await client.connect()
        return
