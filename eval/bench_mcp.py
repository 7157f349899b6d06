"""`python -m eval bench-mcp`: what the MCP server adds to a search (issue 41; goal: search_docs
p50 < 60 ms on the sample index).

The sample docs (--docs, indexed into a temporary folder unless --data-dir names an index) and, in
one process, `/mcp` as `docsbot serve` mounts it (agents/http.py): behind the HTTP connection
guard, with a real token in a SQLite state database, the level looked up by the bot's Directory
(bot/directory.py) against the Slack stand-in, and the per-token rate limit. The SDK's own client
calls search_docs over HTTP; each call alternates with a direct `Engine.search` of the same
question at the same level, so both see the same machine load. Prints both latencies (p50 / p99 /
max), the ratio of the p50s and whether the goal was met.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import statistics
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx2
from aiohttp import web
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import SecretStr

from agents.auth_failures import AuthFailures
from agents.http import MCP_PATH, McpEndpoint
from agents.tools import DocsTools
from bot.access import AccessFile, load_access
from bot.app import web_client
from bot.directory import Directory
from bot.http_guard import ConnectionGuard, listen
from bot.local import demo
from bot.local.standin import SlackStandIn
from bot.telemetry import close_client
from foundation.settings import Settings
from foundation.wiring import lease_config, open_engine
from eval.bench_acks import REPO, free_port, line
from rag import Engine, Level
from state.opening import open_state
from state.ratelimit import RateLimit
from state.tokens import McpTokens
from sync.folder import index_folder

GOAL_P50_S = 0.060
CALLER = demo.BOB  # team, by email domain: the Directory asks Slack (once per lookup TTL)
WARM_UP = 5


def questions(count: int) -> list[str]:
    lines = (REPO / "eval" / "golden.jsonl").read_text(encoding="utf-8").splitlines()
    asked = [json.loads(text)["question"] for text in lines if text.strip()]
    return [asked[i % len(asked)] for i in range(count)]


async def measure(engine: Engine, scratch: Path, calls: int) -> tuple[list[float], list[float]]:
    """(direct searches, search_docs over /mcp), in seconds, interleaved."""
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    db = await open_state(f"sqlite:///{scratch / 'state.db'}")
    settings = Settings(_env_file=None, SLACK_BOT_TOKEN=SecretStr(demo.TOKEN), SLACK_API_URL=standin.base_url)
    client = web_client(settings)
    directory = Directory(client, AccessFile.fixed(load_access(demo.ACCESS_FILE)), settings.bot_lookup_ttl_s)

    async def level_of(user_id: str) -> Level | None:
        await directory.follow_changes()
        return await directory.account_level(user_id)

    endpoint = McpEndpoint(DocsTools(engine), McpTokens(db, 1), level_of, RateLimit(db, 100_000),
                           TransportSecuritySettings(allowed_hosts=["127.0.0.1:*"]),
                           AuthFailures(settings.mcp_auth_failures_per_minute,
                                        settings.mcp_auth_failures_per_minute_all))
    guard = ConnectionGuard(512)
    app = web.Application(middlewares=[guard.middleware()])
    app.add_routes(endpoint.routes())
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    server = await listen(runner, guard, "127.0.0.1", port)
    token, _ = await McpTokens(db, 1).issue(CALLER)
    direct: list[float] = []
    over_mcp: list[float] = []
    try:
        async with endpoint.running(), over_http(f"http://127.0.0.1:{port}{MCP_PATH}", token) as mcp:
            for i, question in enumerate(questions(calls + WARM_UP)):
                started = time.perf_counter()
                await engine.search(question, Level.team)
                searched = time.perf_counter()
                result = await mcp.call_tool("search_docs", {"query": question, "limit": 5})
                done = time.perf_counter()
                if result.is_error:
                    raise RuntimeError(f"search_docs failed: {result.content}")
                if i >= WARM_UP:
                    direct.append(searched - started)
                    over_mcp.append(done - searched)
    finally:
        server.close()
        await runner.cleanup()
        await close_client(client)
        await db.close()
        await standin.stop()
    return direct, over_mcp


@asynccontextmanager
async def over_http(url: str, token: str) -> AsyncIterator[ClientSession]:
    """The SDK's client over streamable HTTP, with the token."""
    async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http,
                streamable_http_client(url, http_client=http) as (read, write),
                ClientSession(read, write) as client):
        await client.initialize()
        yield client


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-mcp", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", default=str(REPO / "docs-sync"), help="docs folder to index (default: docs-sync)")
    parser.add_argument("--data-dir", help="an index already built (default: index --docs into a temporary folder)")
    parser.add_argument("--calls", type=int, default=200, help="search_docs calls (and as many direct searches)")
    args = parser.parse_args(argv[1:])
    logging.basicConfig(level=logging.WARNING)  # before the SDK's server, which would log each request
    with tempfile.TemporaryDirectory(prefix="bench-mcp-") as scratch:
        data_dir = Path(args.data_dir or Path(scratch) / "index")
        settings = Settings(_env_file=None, data_dir=str(data_dir))
        engine = open_engine(settings)
        if not args.data_dir:
            index_folder(engine, lease_config(settings), Path(args.docs))
        direct, over_mcp = asyncio.run(measure(engine, Path(scratch), max(1, args.calls)))
    ratio = statistics.median(over_mcp) / statistics.median(direct)
    print(line("engine.search", direct))
    print(line("search_docs over /mcp", over_mcp))
    met = statistics.median(over_mcp) < GOAL_P50_S
    print(f"p50 ratio {ratio:.2f}x; goal p50 < {GOAL_P50_S * 1000:.0f} ms: {'met' if met else 'MISSED'}")
    return 0 if met else 1
