"""The bot wired to a local Slack: the stand-in Web API, the bot's real HTTP app on a local port,
and a client that delivers signed requests to it. Used by the console, the tests and the benchmark."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
from aiohttp import web
from pydantic import SecretStr

from bot.local import demo
from bot.access import AccessPolicy, load_access
from bot.app import EVENTS_PATH, DocsBot, build_bot, web_app
from bot.deliveries import SlackDeliveries
from bot.services import SyncCommand, housekeeping
from bot.local.standin import SlackStandIn, Workspace
from bot.telemetry import close_client
from foundation.settings import Settings
from foundation.wiring import open_state_db
from rag import Engine
from state.db import StateDB


@dataclass
class LocalSlack:
    standin: SlackStandIn
    bot: DocsBot
    slack: SlackDeliveries
    base_url: str  # the bot's HTTP app, e.g. http://127.0.0.1:PORT

    async def settle(self, timeout_s: float = 30.0) -> None:
        """Wait until every answer the bot started has been posted."""
        await self.bot.services.work.idle(timeout_s)


@asynccontextmanager
async def local_slack(
    settings: Settings,
    engine: Engine,
    workspace: Workspace | None = None,
    policy: AccessPolicy | None = None,
    run_sync: SyncCommand | None = None,
    routes: list[web.RouteDef] | None = None,
    state: StateDB | None = None,
) -> AsyncIterator[LocalSlack]:
    """The bot on a local port; it opens the state database of `settings` unless given one
    (which the caller then closes)."""
    db = state if state is not None else await open_state_db(settings)
    standin = await SlackStandIn(workspace or demo.demo_workspace(), demo.TOKEN).start()
    settings = settings.model_copy(update={
        "slack_bot_token": SecretStr(demo.TOKEN),
        "slack_signing_secret": SecretStr(demo.SIGNING_SECRET),
        "slack_api_url": standin.base_url,
    })
    if policy is None and not settings.access_file:
        policy = load_access(demo.ACCESS_FILE)
    bot = build_bot(settings, engine, db, policy, run_sync, routes)
    runner = web.AppRunner(web_app(bot), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    base_url = f"http://127.0.0.1:{port}"
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    ws = standin.workspace
    slack = SlackDeliveries(session, base_url + EVENTS_PATH, demo.SIGNING_SECRET, ws.team_id, ws.bot_user_id,
                            standin.response_url)
    try:
        async with housekeeping(bot.services):
            yield LocalSlack(standin, bot, slack, base_url)
    finally:
        try:
            await bot.services.work.idle(30)
            await bot.services.answerer.placeholders.flush()
        finally:
            await session.close()
            await close_client(bot.client)
            await engine.aclose()
            await runner.cleanup()
            await standin.stop()
            if state is None:
                await db.close()
