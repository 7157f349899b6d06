"""`docsbot serve`: the bot on $PORT (HTTP mode), or over Socket Mode when SLACK_APP_TOKEN is set
(the HTTP server then still serves health, metrics and the git webhook).

A restart goes unnoticed: on SIGTERM (or SIGINT) readiness fails at once, new Slack requests get
a 503 so Slack delivers them again elsewhere (Socket Mode: the socket is closed), and the answers
in flight get DOCSBOT_DRAIN_S to finish. A placeholder still open after that is edited to say the
bot was restarted, and its question is counted as failed.
"""
from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from contextlib import nullcontext
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.errors import SlackApiError

from bot import blocks, telemetry
from bot.app import DocsBot, web_app
from bot.digest import scheduled
from bot.http_guard import HEAD_TIMEOUT_S, ConnectionGuard, listen, quiet_connection_errors
from bot.recovery import recovering
from bot.services import housekeeping
from bot.socket_mode import keep_connecting, sdk_logger
from foundation.observability.tracing import shutdown_tracing, span
from rag import EmbeddingError, Level, StoreError

log = logging.getLogger(__name__)

RESTARTED = "I was restarted before I could answer: please ask again."
WARM_UP_S = 10.0
WARMING_UP = "warming up the Slack request path"


async def serve(bot: DocsBot, port: int, app_token: str | None = None, host: str = "0.0.0.0",
                drain_s: float = 20.0, max_connections: int = 512) -> None:
    """Run until SIGINT/SIGTERM, then drain (see the module docstring); HTTP behind bot.http_guard."""
    guard = ConnectionGuard(max_connections)
    quiet_connection_errors()
    runner = web.AppRunner(web_app(bot, guard), access_log=None, keepalive_timeout=HEAD_TIMEOUT_S)
    await runner.setup()
    listening = await listen(runner, guard, host, port)
    await verify_slack_auth(bot)
    socket_mode = ObservedSocketMode(bot.app, app_token, logger=sdk_logger()) if app_token else None
    connecting = asyncio.create_task(keep_connecting(socket_mode)) if socket_mode is not None else None
    log.info("docsbot is listening on %s:%d (%s)", host, port,
             "Socket Mode; HTTP for health, metrics and webhooks" if socket_mode
             else "HTTP, Slack events at /slack/events")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with (housekeeping(bot.services), scheduled(bot.services, bot.client),  # retention, digest, gauges
                    recovering(bot.services.recovery, bot.services.state_file)
                    if bot.services.recovery else nullcontext()):
            await stop.wait()
    finally:
        if connecting is not None:
            connecting.cancel()
        await drain(bot, socket_mode, drain_s)
        listening.close()
        await runner.cleanup()
        await telemetry.close_client(bot.client)
        await bot.services.engine.aclose()
        shutdown_tracing()


class ObservedSocketMode(AsyncSocketModeHandler):
    """Socket Mode requests get the arrival time and `slack.event` span HTTP ones get in bot.app."""

    async def handle(self, client: Any, req: Any) -> None:
        with telemetry.slack_request(telemetry.request_kind(req.payload)):
            await super().handle(client, req)


async def verify_slack_auth(bot: DocsBot) -> None:
    """auth.test once at start: readiness stays failed, with Slack's reason, until it passes."""
    try:
        auth = await bot.client.auth_test()
    except SlackApiError as exc:
        bot.readiness.slack_auth = f"Slack auth.test failed: {exc.response.get('error')} (run `docsbot doctor`)"
    except (aiohttp.ClientError, TimeoutError) as exc:
        bot.readiness.slack_auth = f"Slack is unreachable: {type(exc).__name__} (run `docsbot doctor`)"
    else:
        log.info("Slack auth verified", extra={"team_id": auth.get("team_id"), "bot_user_id": auth.get("user_id")})
        bot.readiness.slack_auth = WARMING_UP
        await warm_up(bot, auth.get("team_id") or "", auth.get("user_id") or "")
        bot.readiness.slack_auth = None
        return
    log.error("%s", bot.readiness.slack_auth)


async def warm_up(bot: DocsBot, team_id: str, bot_user_id: str) -> None:
    """What a first burst of requests would otherwise pay for in its acks, paid before readiness
    says ready: one event, as Slack sends them, through Bolt's whole dispatch. Bolt's own
    authorization then holds its auth.test (each request of a cold burst made one, to Slack), and
    the event-id claim opens the state database's connection and dedupe table. The event is a
    member joining a channel that does not exist: it only forgets that channel's audience.

    Then one search, as a question makes: the embedding model's first inference and the index's
    first reads cost hundreds of ms of CPU, which the first burst's acks shared with its first
    answers (its /healthz was as slow as its acks)."""
    body = json.dumps({
        "type": "event_callback", "team_id": team_id, "api_app_id": "", "event_id": f"EvWarmUp{time.time_ns()}",
        "event": {"type": "member_joined_channel", "user": bot_user_id, "channel": "C_WARM_UP", "team": team_id},
        "authorizations": [{"team_id": team_id, "user_id": bot_user_id, "is_bot": True}],
    })
    started = time.perf_counter()
    # Straight to Bolt, past the HTTP guard that checks signatures (Bolt's own check is off).
    response = await bot.app.async_dispatch(AsyncBoltRequest(body=body, headers={"content-type": "application/json"}))
    try:
        await bot.services.work.idle(WARM_UP_S)
    except TimeoutError:
        log.warning("warm-up: the state database did not answer within %.0f s", WARM_UP_S)
    try:
        with span("warm_up"):  # its own trace, not mistaken for a question's
            await bot.services.engine.search("how do I get started?", Level.public)
    except (StoreError, EmbeddingError) as exc:  # the index is not ready: answers will say so
        log.info("warm-up: no search (%s)", type(exc).__name__)
    log.info("warmed up the Slack request path in %.0f ms (HTTP %d)", (time.perf_counter() - started) * 1000,
             response.status)


async def drain(bot: DocsBot, socket_mode: AsyncSocketModeHandler | None, drain_s: float) -> None:
    work = bot.services.work
    bot.readiness.stopping = True
    log.info("shutting down: %d answer(s) in progress get %.0f s to finish", work.pending, drain_s)
    if socket_mode is not None:
        await socket_mode.close_async()
    try:
        await work.idle(drain_s)
    except TimeoutError:
        log.warning("%d answer(s) did not finish within %.0f s", work.pending, drain_s)
        await work.cancel_all()
    await note_restarted(bot)


async def note_restarted(bot: DocsBot) -> None:
    """Edit every placeholder still open to the restart note (delete it if that fails)."""
    answerer = bot.services.answerer
    for placeholder in answerer.placeholders.still_open():
        telemetry.failed(placeholder.surface, "restarted", placeholder.answer_id)
        try:
            await bot.client.chat_update(channel=placeholder.channel, ts=placeholder.ts, **blocks.notice(RESTARTED))
        except (SlackApiError, aiohttp.ClientError, TimeoutError):
            try:
                await bot.client.chat_delete(channel=placeholder.channel, ts=placeholder.ts)
            except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
                log.warning("could not replace or delete a placeholder in %s: %s", placeholder.channel, exc)
        answerer.placeholders.close(placeholder.channel, placeholder.ts)
    await answerer.placeholders.flush()

