"""`docsbot serve` (the Slack bot) and `docsbot console` (the bot against a local Slack).

`serve` is a replica: it answers, and records sync requests for the sync worker, but never
writes the index. `docsbot run` and `console` are the one-process setup: the bot and the sync
worker (holding the index-writer lease) run together.
"""
from __future__ import annotations

import argparse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

# Bolt, the engine and the state store load when a command runs, not when the parser is built.
if TYPE_CHECKING:
    from bot.services import SyncCommand
    from foundation.settings import Settings
    from rag import Engine
    from state.db import StateDB
    from state.sync_requests import SyncRequests


class SlackNotConfigured(ValueError):
    """A Slack setting is missing; the message says which."""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("serve", help="run the Slack bot (HTTP on $PORT, or Socket Mode with SLACK_APP_TOKEN)")
    p.add_argument("--docs", help="index this folder first if the index was built from another")
    p.set_defaults(handler=cmd_serve)
    p = subparsers.add_parser("console", help="talk to the bot in a local stand-in for Slack")
    p.add_argument("--docs", help="docs folder to index if needed (default: $DOCSBOT_DOCS_DIR or docs-sync)")
    p.set_defaults(handler=cmd_console)


def slack_configured(settings: Settings) -> bool:
    return settings.slack_bot_token is not None


def cmd_serve(settings: Settings, args: argparse.Namespace) -> int:
    # A replica never writes the index (unless --docs asks it to index a folder first): an index
    # in a bucket is read from a local mirror, which keeps answering when the bucket does not.
    from foundation.wiring import lease_config, open_engine
    from sync.folder import ensure_index

    engine = open_engine(settings, read_only=not args.docs)
    ensure_index(engine, lease_config(settings), Path(args.docs) if args.docs else None)
    return serve_slack(settings, engine, with_worker=False)


def cmd_console(settings: Settings, args: argparse.Namespace) -> int:
    from foundation.wiring import lease_config, open_engine
    from sync.folder import ensure_index

    if args.docs:  # the folder the in-process worker keeps in sync
        settings = settings.model_copy(update={"docs_dir": args.docs})
    engine = open_engine(settings)
    ensure_index(engine, lease_config(settings), Path(settings.docs_dir))
    return open_console(settings, engine)


def run_bot(settings: Settings, engine: Engine) -> int:
    """`docsbot run`: the Slack bot when a bot token is set, else the local console; either way
    with the sync worker in the same process."""
    if slack_configured(settings):
        return serve_slack(settings, engine, with_worker=True)
    return open_console(settings, engine)


@dataclass
class SyncSide:
    """This process's state store, and how the bot asks for a sync."""

    db: StateDB
    requests: SyncRequests
    command: SyncCommand


@asynccontextmanager
async def sync_side(settings: Settings, engine: Engine, with_worker: bool) -> AsyncIterator[SyncSide]:
    """Open the state store; with_worker also runs the sync worker on this event loop."""
    import asyncio

    from bot.docs_sync import request_sync
    from foundation.wiring import sync_config
    from state.opening import open_state
    from state.sync_requests import SyncRequests
    from sync.service import watched_path
    from sync.worker import SyncWorker

    config = sync_config(settings)
    db = await open_state(config.state)
    requests = SyncRequests(db, config.request_poll_s)
    stop = asyncio.Event()
    worker = None
    if with_worker:
        worker = asyncio.create_task(SyncWorker(config, db, engine.embedder, watched_path(config)).run(stop))
    try:
        yield SyncSide(db, requests, request_sync(requests))
    finally:
        stop.set()
        if worker is not None:
            await worker
        await db.close()


def serve_slack(settings: Settings, engine: Engine, with_worker: bool) -> int:
    missing = [name for name, value in (("SLACK_BOT_TOKEN", settings.slack_bot_token),
                                        ("SLACK_SIGNING_SECRET", settings.slack_signing_secret)) if value is None]
    if missing:
        raise SlackNotConfigured(
            f"set {' and '.join(missing)} to serve Slack (or run `docsbot console` to try it locally)")
    import asyncio

    from bot.app import build_bot
    from bot.docs_sync import webhook_routes
    from bot.mcp_mount import mcp_endpoint
    from bot.serve import serve

    app_token = settings.slack_app_token.get_secret_value() if settings.slack_app_token else None

    async def main() -> None:
        async with sync_side(settings, engine, with_worker) as side:
            bot = build_bot(settings, engine, side.db, run_sync=side.command,
                            routes=webhook_routes(settings, side.requests))
            mcp = mcp_endpoint(bot, side.db)  # `/mcp` for AI agents, beside Slack's routes
            bot.routes.extend(mcp.routes())
            async with mcp.running():
                await serve(bot, settings.port, app_token, settings.host, settings.drain_s,
                            settings.http_max_connections)

    asyncio.run(main())
    return 0


def open_console(settings: Settings, engine: Engine) -> int:
    import asyncio

    from bot.local.console import run_console

    async def main() -> None:
        async with sync_side(settings, engine, with_worker=True) as side:
            await run_console(settings, engine, side.command, side.db)

    asyncio.run(main())
    return 0
