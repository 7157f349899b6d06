"""`docsbot mcp`: the MCP server on stdin/stdout, for one person's machine: a desktop assistant or
a coding agent starts it and talks to it through the pipes (nothing but MCP goes to stdout; logs
go to stderr). It reads the index like `docsbot ask`, at the level of the Slack user named by
`--user` in the access file's [users], else `public`: without Slack to ask, a group or email
domain cannot be checked, so it fails closed. (`docsbot serve` serves the same tools at `/mcp`,
for everyone, each at their own level by their token.)"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from rag import Level

if TYPE_CHECKING:
    from foundation.settings import Settings


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("mcp", help="serve the docs to an AI agent over MCP on stdin/stdout")
    p.add_argument("--user", default="", metavar="SLACK_USER_ID",
                   help="read at this user's level in the access file's [users] (default, or not listed: public)")
    p.set_defaults(handler=cmd_mcp)


def stdio_level(settings: Settings, user: str) -> Level:
    """The level `docsbot mcp --user` reads at: the access file's [users] entry, else public."""
    if not user:
        return Level.public
    from bot.access import load_access

    return load_access(settings.access_file or None).users.get(user, Level.public)


def cmd_mcp(settings: Settings, args: argparse.Namespace) -> int:
    import asyncio

    from agents.server import build_server, fixed_caller, logged_privately
    from agents.tools import Caller, DocsTools
    from foundation.wiring import open_engine, open_state_db
    from state.answers import AnswerLog

    caller = Caller(args.user, stdio_level(settings, args.user))
    engine = open_engine(settings, read_only=True)

    async def main() -> None:
        db = await open_state_db(settings)  # questions are counted in the docs gaps, privately
        try:
            tools = DocsTools(engine, logged_privately(AnswerLog(db, settings.answer_log_days)))
            await build_server(tools, fixed_caller(caller)).run_stdio_async()
        finally:
            await engine.aclose()
            await db.close()

    asyncio.run(main())
    return 0
