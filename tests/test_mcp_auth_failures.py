"""Failed authentications at `/mcp` are limited per client address and in all (issue 51), on a
real `docsbot serve` with real HTTP requests from three loopback addresses: past the limit a
request is refused with 429 and Retry-After before its token is looked up (the served process's
/metrics counts the look-ups), while a token accepted recently still gets in. Every refusal is a
JSON-RPC error whose message says why, so the MCP SDK's client shows the agent that line, not
its generic "-32603 Server returned an error response"."""
from __future__ import annotations

import json
import re

import aiohttp
from mcp import MCPError

from agents.http import BAD_TOKEN, MCP_PATH
from bot.local import demo
from eval.bench_mcp import over_http
from foundation.settings import Settings
from rag import Engine
from state.tokens import PREFIX
from tests.support.mcp import LIST_TOOLS, MCP_HEADERS
from tests.support.served import Served, served
from tests.test_mcp import bearer, token_from_slack

LIMITS = {"DOCSBOT_MCP_AUTH_FAILURES_PER_MINUTE": "3", "DOCSBOT_MCP_AUTH_FAILURES_PER_MINUTE_ALL": "5",
          "DOCSBOT_MCP_CALLS_PER_MINUTE": "8"}


async def post(bot: Served, address: str, token: str) -> tuple[int, dict, str]:
    """tools/list from `address` with `token`: (status, the JSON-RPC error or {}, Retry-After)."""
    async with (aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(address, 0))) as session,
                session.post(bot.base_url + MCP_PATH, json=LIST_TOOLS, headers={**MCP_HEADERS, **bearer(token)})
                as response):
        body = json.loads(await response.text())
        return response.status, body.get("error") or {}, response.headers.get("Retry-After", "")


async def lookups(bot: Served) -> float:
    async with bot.slack.session.get(bot.base_url + "/metrics") as response:
        [count] = re.findall(r"^docsbot_mcp_token_lookups_total (\S+)$", await response.text(), re.M)
    return float(count)


async def mcp_error(bot: Served, token: str) -> MCPError:
    """What the SDK's client raises for a session with this token."""
    raised: list[MCPError] = []
    try:
        async with over_http(bot.base_url + MCP_PATH, token) as session:
            await session.list_tools()
    except* MCPError as group:
        raised = list(_leaves(group))
    assert raised, "the client raised nothing"
    return raised[0]


def _leaves(error: BaseException) -> list:
    return [leaf for e in error.exceptions for leaf in _leaves(e)] if isinstance(error, BaseExceptionGroup) else [error]


async def test_failed_authentications_are_limited_by_address_and_in_all_before_any_look_up(
        sample_engine: Engine, settings: Settings) -> None:
    async with served(settings.data_dir, **LIMITS) as bot:
        bob, eve = await token_from_slack(bot, demo.BOB), await token_from_slack(bot, demo.EVE)
        assert (await post(bot, "127.0.0.1", bob))[0] == 200  # accepted: bob's token is known good
        before = await lookups(bot)
        # The SDK's client shows the agent why a token is refused (one failure from 127.0.0.1).
        refused = await mcp_error(bot, f"{PREFIX}revoked-long-ago")
        assert refused.error.code != -32603 and refused.error.message == BAD_TOKEN
        assert await lookups(bot) == before + 1

        # 127.0.0.1 guesses on: two more failures, then 429s that cost no look-up.
        wrong = [await post(bot, "127.0.0.1", f"{PREFIX}guess-{i}") for i in range(5)]
        assert [status for status, _, _ in wrong] == [401] * 2 + [429] * 3
        assert wrong[0][1]["message"] == BAD_TOKEN  # the refusal's line, as a JSON-RPC error
        assert "too many failed authentications" in wrong[-1][1]["message"] and 1 <= int(wrong[-1][2]) <= 60
        assert await lookups(bot) == before + 3
        # 127.0.0.2 fails twice: five failures in all, so now every address waits, 127.0.0.3 too.
        assert [(await post(bot, "127.0.0.2", f"{PREFIX}guess-{i}"))[0] for i in range(3)] == [401, 401, 429]
        assert (await post(bot, "127.0.0.3", f"{PREFIX}guess"))[0] == 429
        assert (await post(bot, "127.0.0.3", eve))[0] == 429  # a token not seen working cannot be told apart
        assert await lookups(bot) == before + 5
        # bob's token, accepted a moment ago, still gets in from the address that guessed.
        assert (await post(bot, "127.0.0.1", bob))[0] == 200 and await lookups(bot) == before + 6

        # Over bob's per-token rate, the SDK's client says so too.
        while (await post(bot, "127.0.0.1", bob))[0] == 200:
            pass
        refused = await mcp_error(bot, bob)
        assert refused.error.code != -32603 and "too many calls with this token" in refused.error.message
