"""The MCP server (issue 41) through the official SDK's client: `/mcp` on one real `docsbot serve`
(tokens from `/docs token` in Slack, the audience tests' documents and people), and `docsbot mcp`
on stdio. A public token never receives a team or restricted passage; a restricted page reads
exactly like a missing one; no, revoked or expired tokens and deactivated owners get a 401, and an
owner whose level drops reads at the new level from the next call; a question asked through MCP
is counted in the gaps and shown nowhere."""
from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.shared.exceptions import MCPError
from sqlalchemy import text

from agents.http import MCP_PATH
from bot.local import demo
from bot.local.standin import Failure, visible_text
from foundation.settings import Settings
from commands.mcp_command import stdio_level
from eval.bench_mcp import measure, over_http
from rag import Answer, Diagnostics, Engine, Level
from state.gaps import GapLog
from state.opening import open_state
from state.tokens import DAY_S, PREFIX, McpTokens
from tests.support.mcp import LIST_TOOLS, MCP_HEADERS, call, doc_levels, error_of, over_stdio
from tests.support.served import Served, served
from tests.support.settings import make_settings
from tests.support.waiting import until
from tests.test_scaleout import new_event_id

ON_CALL = "who is on call this week, and how do I swap a shift?"  # on-call.md is `team`
BREAK_GLASS = "runbooks/emergency-db-access.md"  # `restricted`
PRIVATE = "how do I recalibrate the flux quokka zebrafier?"  # nothing covers it: a gap
TOOLS = {"search_docs", "ask_docs", "read_doc"}
ASK_JSON = set(Answer("q", "", False, None, [], Diagnostics(), "public").to_json())  # `docsbot ask --json`


async def token_from_slack(bot: Served, user: str) -> str:
    """`/docs token` as `user`: the token, from the one ephemeral reply that carries it."""
    before = len(bot.standin.responses)
    assert (await bot.slack.command(user, demo.GENERAL, "token")).status == 200
    await until(lambda: len(bot.standin.responses) > before, 30, "no reply to /docs token")
    reply = bot.standin.responses[before]
    assert reply["response_type"] == "ephemeral"
    [token] = re.findall(rf"{PREFIX}[\w-]+", visible_text(reply))
    return token


async def status(bot: Served, headers: dict[str, str]) -> tuple[int, str]:
    async with bot.slack.session.post(bot.base_url + MCP_PATH, json=LIST_TOOLS,
                                      headers={**MCP_HEADERS, **headers}) as response:
        return response.status, await response.text()


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.timeout(300)
async def test_mcp_over_http_reads_at_the_tokens_level_and_keeps_questions_private(
        sample_engine: Engine, settings: Settings, tmp_path: Path) -> None:
    levels = await doc_levels(sample_engine)
    access = tmp_path / "access.toml"
    access.write_text(demo.ACCESS_FILE.read_text(encoding="utf-8"), encoding="utf-8")
    async with served(settings.data_dir, DOCSBOT_MCP_CALLS_PER_MINUTE="30", DOCSBOT_ACCESS_FILE=str(access)) as bot:
        url = bot.base_url + MCP_PATH
        eve, bob, alice, dan, guest = [await token_from_slack(bot, user)
                                       for user in (demo.EVE, demo.BOB, demo.ALICE, demo.DAN, demo.GUEST)]
        # The token was shown once, to its owner alone: in no conversation, in no log line.
        posted = [m for messages in bot.standin.messages.values() for m in messages]
        assert not [m for m in posted if eve in visible_text(m)] and not [line for line in bot.stderr if eve in line]

        async with over_http(url, eve) as session:
            assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
            found = await call(session, "search_docs", query=ON_CALL, limit=20)
            assert found["level"] == "public" and {levels[p["doc_path"]] for p in found["passages"]} <= {Level.public}
            missing = await error_of(session, "read_doc", path="runbooks/no-such-page.md")
            above = await error_of(session, "read_doc", path=BREAK_GLASS)
            assert above == missing.replace("runbooks/no-such-page.md", BREAK_GLASS)
            answer = await call(session, "ask_docs", question="how do I submit an expense report?")
            assert set(answer) == ASK_JSON and answer["level"] == "public"
        async with over_http(url, bob) as session:  # the same search at `team` does reach the team page
            found = await call(session, "search_docs", query=ON_CALL, limit=20)
            assert Level.team in {levels[p["doc_path"]] for p in found["passages"]}
        async with over_http(url, alice) as session:
            page = await call(session, "read_doc", path=BREAK_GLASS, section="who approves")
            assert page["commit"] and "approve" in page["text"].lower() and len(page["sections"]) > 1
            asked = await call(session, "ask_docs", question=PRIVATE)
            assert asked["answered"] is False

        # Refused, with one line: no token, a bad one, a revoked one, an expired one, a deactivated owner.
        assert (await status(bot, {}))[0] == 401 and (await status(bot, {}))[1].count("\n") == 1
        assert (await status(bot, bearer(PREFIX + "not-a-token")))[0] == 401
        assert (await status(bot, bearer(dan)))[0] == 200
        db = await open_state(f"sqlite:///{Path(settings.data_dir).resolve() / 'state.db'}")
        try:
            stale, _ = await McpTokens(db, 1, clock=lambda: time.time() - 2 * DAY_S).issue(demo.EVE)
            assert (await status(bot, bearer(stale)))[0] == 401
            [listed] = await McpTokens(db, 90).listed(demo.GUEST)
            assert (await bot.slack.command(demo.GUEST, demo.GENERAL, f"token revoke {listed.token_id}")).status == 200
            await until(lambda: _refused(bot, guest), 30, "a revoked token still works")  # revoked in the background
            bot.standin.workspace.users[demo.DAN]["deleted"] = True
            assert (await bot.slack.event({"type": "user_change", "user": {"id": demo.DAN, "deleted": True}},
                                          new_event_id())).status == 200
            await until(lambda: _refused(bot, dan), 30, "a deactivated owner's token still works")
            assert "deactivated" in (await status(bot, bearer(dan)))[1]
            # A browser page from elsewhere (DNS rebinding) is turned away by the SDK's host check.
            assert (await status(bot, {**bearer(bob), "Host": "evil.example"}))[0] == 421
            # Over the per-token rate: 429 with Retry-After (bob's token made a handful of calls so far).
            statuses = [(await status(bot, bearer(bob)))[0] for _ in range(30)]
            assert statuses[-1] == 429 and statuses.count(200) >= 20

            # The MCP question is in the answer log, counted at alice's level, with no asker...
            [gap] = [g for g in await GapLog(db).unanswered(0, int(time.time() * 1000) + 1) if g.question == PRIVATE]
            assert gap.asker == "" and gap.context == Level.restricted and not gap.public
        finally:
            await db.close()
        # ... and nobody sees its words: not in /docs gaps (alice is an admin, and asked it), not on a Home tab.
        before = len(bot.standin.responses)
        assert (await bot.slack.command(demo.ALICE, demo.GENERAL, "gaps")).status == 200
        await until(lambda: len(bot.standin.responses) > before, 30, "no reply to /docs gaps")
        shown = [visible_text(r) for r in bot.standin.responses[before:]]
        for user in (demo.ALICE, demo.BOB):
            event = {"type": "app_home_opened", "user": user, "channel": bot.standin.dm_channel(user), "tab": "home",
                     "event_ts": bot.standin.next_ts()}
            assert (await bot.slack.event(event, new_event_id())).status == 200
            await until(lambda: user in bot.standin.home_tabs, 30, "no Home tab")  # noqa: B023
            shown.append(visible_text(bot.standin.home_tabs[user]))
        assert "1; not quoted" in shown[0] and not [text for text in shown if "zebrafier" in text]  # counted, unquoted

        # alice's level drops to public in the access file: her token reads at public from the next call.
        # The file is replaced whole (a reader never sees half of it), and one session asks again
        # and again (one request a try: the per-token rate is 30 a minute).
        replace_file(access, access.read_text(encoding="utf-8").replace('U_ALICE = "restricted"', 'U_ALICE = "public"'))
        async with over_http(url, alice) as session:
            async def dropped() -> bool:
                return (await session.call_tool("read_doc", {"path": BREAK_GLASS})).is_error

            await until(dropped, 30, "alice's token still reads restricted pages")


def replace_file(path: Path, text: str) -> None:
    """`path` holds `text` at once: written beside it, then renamed over it."""
    written = path.with_name(path.name + ".new")
    written.write_text(text, encoding="utf-8")
    os.replace(written, path)


async def _refused(bot: Served, token: str) -> bool:
    return (await status(bot, bearer(token)))[0] == 401


async def test_a_deactivation_slack_never_announces_ends_the_token_within_mcp_owner_fresh_s(
        sample_engine: Engine, settings: Settings) -> None:
    """No `user_change` ever comes: users.info alone starts saying `deleted` (issue 51 item 1).
    Within DOCSBOT_MCP_OWNER_FRESH_S (1 s here; the lookup cache keeps people 300 s) the token is
    refused; while Slack cannot be asked about an owner, their token is refused (503), not served."""
    async with served(settings.data_dir, DOCSBOT_MCP_OWNER_FRESH_S="1", DOCSBOT_MCP_CALLS_PER_MINUTE="10000") as bot:
        url = bot.base_url + MCP_PATH
        dan, bob = [await token_from_slack(bot, user) for user in (demo.DAN, demo.BOB)]
        async with over_http(url, dan) as session:  # the SDK's client, as dan's agent
            assert (await call(session, "search_docs", query=ON_CALL, limit=5))["level"] == "restricted"
            bot.standin.workspace.users[demo.DAN]["deleted"] = True  # and no user_change event, ever
            deactivated = time.monotonic()
            await until(lambda: _sdk_refused(session), 10, "a deactivated owner's token still works")
            assert time.monotonic() - deactivated < 1 + 2  # the bound, and a request or two
        code, line = await status(bot, bearer(dan))
        assert code == 401 and "deactivated" in line

        assert (await status(bot, bearer(bob)))[0] == 200
        await asyncio.sleep(1.1)
        bot.standin.fail_next("users.info", Failure("internal_error"))
        code, line = await status(bot, bearer(bob))
        assert code == 503 and "cannot be confirmed" in line
        assert (await status(bot, bearer(bob)))[0] == 200  # Slack answers again: so does the token


async def _sdk_refused(session: ClientSession) -> bool:
    """Whether the server refused the SDK's next call (the SDK raises on a 401)."""
    try:
        await session.call_tool("search_docs", {"query": ON_CALL})
    except MCPError:
        return True
    return False


async def test_mcp_over_stdio_reads_at_the_level_it_was_started_with(sample_engine: Engine, settings: Settings) -> None:
    levels = await doc_levels(sample_engine)
    env = {**os.environ, "DOCSBOT_DATA_DIR": settings.data_dir, "DOCSBOT_ACCESS_FILE": str(demo.ACCESS_FILE)}
    async with over_stdio(env) as session:  # no --user: public
        assert {tool.name for tool in (await session.list_tools()).tools} == TOOLS
        found = await call(session, "search_docs", query=ON_CALL, limit=20)
        assert found["passages"] and {levels[p["doc_path"]] for p in found["passages"]} == {Level.public}
        assert all(p["commit"] and p["title"] for p in found["passages"])
        missing = await error_of(session, "read_doc", path="nowhere.md")
        assert await error_of(session, "read_doc", path=BREAK_GLASS) == missing.replace("nowhere.md", BREAK_GLASS)
        assert "longer than" in await error_of(session, "search_docs", query="x" * 3000)


def test_the_stdio_level_is_the_access_files_for_the_user_named_else_public(tmp_path: Path) -> None:
    settings = make_settings(tmp_path, access_file=str(demo.ACCESS_FILE))
    assert stdio_level(settings, demo.ALICE) == Level.restricted  # named in [users]
    assert stdio_level(settings, demo.BOB) == Level.public  # team by email domain: Slack would have to say
    assert stdio_level(settings, "") == Level.public


async def test_tokens_are_stored_hashed_and_end_when_revoked_or_expired(state_url: str) -> None:
    db = await open_state(state_url)
    now = [1_000_000.0]
    tokens = McpTokens(db, 30, clock=lambda: now[0])
    try:
        token, info = await tokens.issue(demo.BOB)
        other, _ = await tokens.issue(demo.BOB)
        assert (await tokens.holder(token)).user_id == demo.BOB  # type: ignore[union-attr]
        async with db.begin() as session:
            stored = [row[0] for row in (await session.execute(text("SELECT token_hash || user_id FROM mcp_tokens")))]
        assert token not in " ".join(stored) and len(stored) == 2
        assert [t.token_id for t in await tokens.listed(demo.BOB)][0] == info.token_id
        assert await tokens.revoke(demo.EVE, info.token_id) == 0  # not hers
        assert await tokens.revoke(demo.BOB, info.token_id) == 1
        assert await tokens.holder(token) is None and await tokens.holder(other) is not None
        now[0] += 31 * DAY_S
        assert await tokens.holder(other) is None and await tokens.listed(demo.BOB) == []
    finally:
        await db.close()


async def test_bench_mcp_times_search_docs_against_a_direct_search(sample_engine: Engine, tmp_path: Path) -> None:
    direct, over_mcp = await measure(sample_engine, tmp_path, 3)  # raises if a search_docs call fails
    assert len(direct) == len(over_mcp) == 3 and min(over_mcp) > 0
