"""`docsbot serve`: the bot on $PORT (HTTP mode), or over Socket Mode when SLACK_APP_TOKEN is set
(the HTTP server then still serves /healthz and the git webhook)."""
from __future__ import annotations

import asyncio
import logging
import signal

from aiohttp import web
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

from bot.app import DocsBot, web_app
from bot.services import housekeeping

log = logging.getLogger(__name__)

SHUTDOWN_GRACE_S = 30.0


async def serve(bot: DocsBot, port: int, app_token: str | None = None, host: str = "0.0.0.0") -> None:
    """Run until SIGINT/SIGTERM, then let the answers in flight finish (up to 30 s)."""
    runner = web.AppRunner(web_app(bot), access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    socket_mode = AsyncSocketModeHandler(bot.app, app_token) if app_token else None
    if socket_mode is not None:
        await socket_mode.connect_async()
    log.warning("docsbot is listening on %s:%d (%s)", host, port,
                "Socket Mode; HTTP for /healthz and webhooks" if socket_mode else "HTTP, Slack events at /slack/events")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        async with housekeeping(bot.services):
            await stop.wait()
    finally:
        log.warning("shutting down: finishing %d answer(s) in progress", bot.services.work.pending)
        if socket_mode is not None:
            await socket_mode.close_async()
        try:
            await bot.services.work.idle(SHUTDOWN_GRACE_S)
        except TimeoutError:
            log.warning("some answers did not finish within %.0f s", SHUTDOWN_GRACE_S)
        await runner.cleanup()
