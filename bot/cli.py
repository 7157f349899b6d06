"""`docsbot serve` (the Slack bot) and `docsbot console` (the bot against a local Slack)."""
from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from bot.app import build_bot
from bot.console import run_console
from bot.docs_sync import sync_now, webhook_routes
from bot.serve import serve
from sync.folder import ensure_index
from docsbot.settings import Settings
from rag.engine import Engine
from state.db import open_state


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
    engine = Engine.from_settings(settings)
    ensure_index(engine, Path(args.docs) if args.docs else None)
    return serve_slack(settings, engine)


def cmd_console(settings: Settings, args: argparse.Namespace) -> int:
    engine = Engine.from_settings(settings)
    ensure_index(engine, Path(args.docs or settings.docs_dir))
    return open_console(settings, engine)


def run_bot(settings: Settings, engine: Engine) -> int:
    """`docsbot run`: the Slack bot when a bot token is set, else the local console."""
    return serve_slack(settings, engine) if slack_configured(settings) else open_console(settings, engine)


def serve_slack(settings: Settings, engine: Engine) -> int:
    missing = [name for name, value in (("SLACK_BOT_TOKEN", settings.slack_bot_token),
                                        ("SLACK_SIGNING_SECRET", settings.slack_signing_secret)) if value is None]
    if missing:
        raise SlackNotConfigured(f"set {' and '.join(missing)} to serve Slack (or run `docsbot console` to try it locally)")
    app_token = settings.slack_app_token.get_secret_value() if settings.slack_app_token else None

    async def serve_with_state() -> None:
        state = await open_state(settings)
        try:
            bot = build_bot(settings, engine, state, run_sync=sync_now(settings, engine),
                            routes=webhook_routes(settings, engine))
            await serve(bot, settings.port, app_token)
        finally:
            await state.close()

    asyncio.run(serve_with_state())
    return 0


def open_console(settings: Settings, engine: Engine) -> int:
    asyncio.run(run_console(settings, engine))
    return 0
