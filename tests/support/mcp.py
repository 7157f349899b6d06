"""The official MCP SDK's client against our server over stdio (a real `docsbot mcp` process; over
HTTP it is eval/bench_mcp.py's `over_http`), and the levels of the sample docs, to check what a
caller received."""
from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from rag import Engine, Level
from tests.support.settings import REPO

# A JSON-RPC request as an agent posts it, for the checks on HTTP statuses.
LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@asynccontextmanager
async def over_stdio(env: dict[str, str], *args: str) -> AsyncIterator[ClientSession]:
    """A real `docsbot mcp` process (its stderr is this process's)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "commands.cli", "mcp", *args], env=env,
                                   cwd=str(REPO))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await session.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return result.structured_content


async def error_of(session: ClientSession, tool: str, **arguments: Any) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error
    return "".join(getattr(block, "text", "") for block in result.content)


async def doc_levels(engine: Engine) -> dict[str, Level]:
    """Each indexed page's level, read from the index itself."""
    return {path: Level.parse((await engine.store.doc_rows(path, int(Level.restricted)))[0]["access"])
            for path in await engine.store.documents()}
