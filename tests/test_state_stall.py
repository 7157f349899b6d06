"""A Postgres that accepts connections and never answers, made by a TCP proxy in front of the real
server (tests/support/tcp_proxy.py): every state operation ends in StateUnavailable within its bound and
drops the silent connection, and a real `docsbot serve` stays ready and keeps answering questions
(the README's "replicas keep answering"), then recovers once the server answers again."""
from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from bot.local.standin import visible_text
from foundation.settings import Settings
from rag.engine import Engine
from state.db import StateDB, StateUnavailable
from state.opening import open_state
from tests.support.served import Served, served
from tests.support.tcp_proxy import StallingProxy
from tests.support.waiting import until

VPN = "how do I set up the VPN?"
ANSWER = "Use the VPN portal"
SLACK = 1.5  # this machine is shared: time allowed past each bound for a loaded CPU
# The bounds state/db.py promises: a pooled connection's silent reply, then a new connection.
POOLED_BOUND_S = 5.0
NEW_CONNECTION_BOUND_S = 2.0
REPLY_BOUND_S = 3.0
STATEMENT_TIMEOUT_S = 2.0
# A stalled question: the dedupe claim (a pooled connection, 5 s) and the rate limit (a new one,
# 2 s) before the placeholder, then the answer; its log write fails after it is posted.
QUESTION_BOUND_S = POOLED_BOUND_S + NEW_CONNECTION_BOUND_S + 3.0


@pytest.fixture
async def proxied(postgres_url: str) -> AsyncIterator[tuple[StallingProxy, str]]:
    """The proxy in front of a fresh database (skipped without Postgres), and its URL through the proxy."""
    server = make_url(postgres_url)
    proxy = await StallingProxy(server.host or "127.0.0.1", server.port or 5432).start()
    try:
        yield proxy, server.set(port=proxy.listen_port).render_as_string(hide_password=False)
    finally:
        await proxy.stop()


async def backend_pid(db: StateDB) -> int:
    async with db.begin() as session:
        return int((await session.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def unavailable_within(bound_s: float, operation: Callable[[], Awaitable[Any]], what: str) -> str:
    """Run `operation`, which must raise StateUnavailable within `bound_s` (+ SLACK); its message."""
    started = time.monotonic()
    try:
        async with asyncio.timeout(bound_s + SLACK):
            await operation()
    except StateUnavailable as exc:
        return str(exc)
    except TimeoutError:
        pytest.fail(f"{what}: no StateUnavailable within {bound_s + SLACK:g} s")
    pytest.fail(f"{what}: succeeded after {time.monotonic() - started:.1f} s with the server silent")


async def test_a_silent_server_is_unavailable_within_seconds_and_its_connection_is_dropped(
    proxied: tuple[StallingProxy, str],
) -> None:
    proxy, url = proxied
    db = await open_state(url)
    try:
        before = await backend_pid(db)  # the pool now holds this connection
        proxy.stall()
        first = await unavailable_within(POOLED_BOUND_S, lambda: backend_pid(db), "the pooled connection")
        assert "is unavailable" in first, first
        await unavailable_within(NEW_CONNECTION_BOUND_S, lambda: backend_pid(db), "a new connection")
        proxy.resume()
        async with asyncio.timeout(SLACK):
            after = await backend_pid(db)
        assert after != before, "the connection left silent was handed out again"
    finally:
        await db.close()


async def test_a_reply_that_never_comes_mid_transaction_hangs_up_and_says_so(
    proxied: tuple[StallingProxy, str],
) -> None:
    proxy, url = proxied
    db = await open_state(url)

    async def stalled_in_the_middle() -> None:
        async with db.begin() as session:
            await session.execute(text("SELECT 1"))
            proxy.stall()
            await session.execute(text("SELECT 2"))

    try:
        reason = await unavailable_within(REPLY_BOUND_S, stalled_in_the_middle, "the second statement")
        assert reason.endswith("no answer from the server within 3 s"), reason
    finally:
        proxy.resume()
        await db.close()


async def test_a_slow_statement_is_cancelled_by_the_server_and_the_connection_kept(
    proxied: tuple[StallingProxy, str],
) -> None:
    _, url = proxied
    db = await open_state(url)

    async def sleep_on_the_server() -> None:
        async with db.begin() as session:
            await session.execute(text("SELECT pg_sleep(30)"))

    try:
        before = await backend_pid(db)
        reason = await unavailable_within(STATEMENT_TIMEOUT_S, sleep_on_the_server, "pg_sleep(30)")
        assert "statement timeout" in reason, reason
        assert await backend_pid(db) == before, "a connection whose statement timed out was dropped"
    finally:
        await db.close()


async def readyz(bot: Served) -> tuple[int, dict[str, Any], float]:
    started = time.monotonic()
    async with bot.slack.session.get(bot.base_url + "/readyz") as response:
        return response.status, await response.json(), time.monotonic() - started


def answers(bot: Served) -> int:
    return sum(ANSWER in visible_text(m) for m in bot.bot_messages())


async def test_a_replica_stays_ready_and_answers_while_the_state_database_is_silent(
    sample_engine: Engine, settings: Settings, proxied: tuple[StallingProxy, str],
) -> None:
    proxy, url = proxied
    async with served(settings.data_dir, DOCSBOT_DATABASE_URL=url) as bot:
        assert await bot.ask(VPN) == 200
        await until(lambda: answers(bot) == 1, 60)
        assert (await readyz(bot))[:2] == (200, {"ready": True, "problems": {}, "degraded": {}})

        proxy.stall()
        status, body, took = await readyz(bot)
        assert status == 200 and body["ready"] is True and set(body["degraded"]) == {"state"}, body
        assert took < 0.5 + SLACK, f"/readyz took {took:.1f} s with the state database silent"

        asked = time.monotonic()
        assert await bot.ask(VPN + " (again)") == 200
        try:
            await until(lambda: answers(bot) == 2, QUESTION_BOUND_S + SLACK)
        except TimeoutError:
            pytest.fail(f"no answer posted within {QUESTION_BOUND_S + SLACK:g} s of a question asked "
                        "with the state database silent")
        print(f"answered {time.monotonic() - asked:.1f} s after the question, the state database silent")
        await until(lambda: any("could not log answer" in line for line in bot.stderr), POOLED_BOUND_S + SLACK)
        assert any("rate limit not checked" in line for line in bot.stderr), "the rate limit did not fail open"

        proxy.resume()
        try:
            async with asyncio.timeout(POOLED_BOUND_S + SLACK):
                while (await readyz(bot))[1]["degraded"]:
                    await asyncio.sleep(0.2)
        except TimeoutError:
            pytest.fail("/readyz still reports the state database degraded after it answers again")
