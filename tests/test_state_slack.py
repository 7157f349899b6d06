"""The bot's shared state through Slack: two replicas sharing one state database (dedupe of
deliveries and retries, one rate limit), `/docs feedback` by the admin's level, and what people
see while the state database is unreachable."""
from __future__ import annotations

import asyncio
import itertools
import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from sqlalchemy.engine import make_url

from bot.local import demo
from bot.access import load_access
from bot.deliveries import buttons
from bot.feedback import RETRY
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import visible_text
from foundation.settings import Settings
from rag.engine import Engine
from tests.support.slack import final_updates

VPN = "how do I set up the VPN?"
BREAK_GLASS = "how do I get emergency write access to tp-prod-db during an incident?"


def with_state(settings: Settings, url: str, **overrides: Any) -> Settings:
    return settings.model_copy(update={"database_url": SecretStr(url), **overrides})


def answers(local: LocalSlack) -> list[dict[str, Any]]:
    """Every answer (or abstention) the bot wrote, in any conversation."""
    return final_updates(local.standin)


@asynccontextmanager
async def replicas(
    settings: Settings, engine: Engine, count: int = 2, **kwargs: Any
) -> AsyncIterator[list[LocalSlack]]:
    """`count` bots, each with its own state connection pool, over one state database. (Each
    replica's deliveries number their event ids alike: tests give ids explicitly.)"""
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(local_slack(settings, engine, **kwargs)) for _ in range(count)]


_posted = itertools.count(1)


def post(replicas: list[LocalSlack], channel: str, user: str, text: str) -> str:
    """A person posts a message: it is in every replica's view of Slack, with one ts (from a
    sequence of its own, so it never collides with the ts a stand-in gives the bot's posts)."""
    ts = f"1700000000.{next(_posted):06d}"
    for local in replicas:
        local.standin.messages.setdefault(channel, []).append({"type": "message", "user": user, "text": text, "ts": ts})
    return ts


async def test_two_replicas_answer_each_message_once(sample_engine: Engine, settings: Settings, state_url: str) -> None:
    settings = with_state(settings, state_url)
    async with replicas(settings, sample_engine) as (a, b):
        mention_text = f"<@{a.standin.workspace.bot_user_id}> {VPN}"
        # the same event to A, and Slack's retry of it to B: one answer, from A
        ts = post([a, b], demo.GENERAL, demo.BOB, mention_text)
        event = a.slack.mention(demo.BOB, demo.GENERAL, VPN, ts)
        assert (await a.slack.event(event, "Ev_A1")).status == 200
        await asyncio.sleep(0.5)  # Slack retries after its 3 s ack timeout, never at once
        assert (await b.slack.event(event, "Ev_A1", retry=1)).status == 200
        await asyncio.gather(a.settle(), b.settle())
        assert (len(answers(a)), len(answers(b))) == (1, 0)
        # a retry to B whose first delivery reached no replica: answered by B
        ts = post([a, b], demo.GENERAL, demo.DAN, mention_text)
        assert (await b.slack.event(b.slack.mention(demo.DAN, demo.GENERAL, VPN, ts), "Ev_LOST", retry=1)).status == 200
        await b.settle()
        assert (len(answers(a)), len(answers(b))) == (1, 1)
        # a DM mention, as `app_mention` to A and `message.im` to B at the same moment: one answer
        dm = a.standin.dm_channel(demo.BOB)
        assert b.standin.dm_channel(demo.BOB) == dm
        ts = post([a, b], dm, demo.BOB, mention_text)
        await asyncio.gather(a.slack.event(a.slack.mention(demo.BOB, dm, VPN, ts), "Ev_MENTION"),
                             b.slack.event(b.slack.direct_message(demo.BOB, dm, mention_text, ts), "Ev_IM"))
        await asyncio.gather(a.settle(), b.settle())
        assert len(answers(a)) + len(answers(b)) == 3
        assert [u["channel"] for u in answers(a) + answers(b)].count(dm) == 1


async def test_the_rate_limit_is_shared_by_the_replicas(
    sample_engine: Engine, settings: Settings, state_url: str
) -> None:
    settings = with_state(settings, state_url, bot_user_questions_per_minute=2)
    async with replicas(settings, sample_engine) as (a, b):
        for local in (a, a, b):
            ts = post([a, b], demo.GENERAL, demo.BOB, VPN)
            await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, ts), f"Ev{ts}")
            await local.settle()
        assert (len(answers(a)), len(answers(b))) == (2, 0)
        [limited] = b.standin.calls_to("chat.postEphemeral", ok_only=True)
        assert limited["user"] == demo.BOB and "asked 2 questions in the last minute" in limited["text"]


async def test_feedback_summary_shows_an_admin_only_questions_at_their_level(
    sample_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    """Bob (team) and Alice (restricted) are both admins; a 👎 on an answer given at the
    restricted level is listed for Alice only."""
    access = tmp_path / "access.toml"
    access.write_text(demo.ACCESS_FILE.read_text().replace('admins = ["U_ALICE"]', 'admins = ["U_ALICE", "U_BOB"]'))
    async with local_slack(settings, sample_engine, policy=load_access(access)) as local:
        dm = local.standin.dm_channel(demo.ALICE)
        ts = local.standin.post_as_user(dm, demo.ALICE, BREAK_GLASS)
        await local.slack.event(local.slack.direct_message(demo.ALICE, dm, BREAK_GLASS, ts))
        ts = local.standin.post_as_user(demo.GENERAL, demo.BOB, VPN)
        await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, ts), f"Ev{ts}")
        await local.settle()
        by_channel = {m["channel"]: m for m in answers(local)}
        restricted, public = by_channel[dm], by_channel[demo.GENERAL]
        for message, user in ((restricted, demo.ALICE), (public, demo.BOB)):
            await local.slack.click(user, message["channel"], buttons(message)[1], message)
        await local.settle()
        ids = {name: buttons(m)[1]["value"] for name, m in (("restricted", restricted), ("public", public))}
        assert (await local.bot.services.answer_log.get(ids["restricted"])).level == "restricted"

        await local.slack.command(demo.BOB, demo.GENERAL, "feedback")
        await local.settle()
        summary = local.standin.responses[-1]["text"]
        assert ids["public"] in summary and ids["restricted"] not in summary and "tp-prod-db" not in summary
        await local.slack.command(demo.ALICE, demo.GENERAL, "feedback")
        await local.settle()
        shown = local.standin.responses[-1]["text"]
        assert ids["public"] in shown and ids["restricted"] in shown


class Outage:
    """The state database becoming unreachable under a running bot, for real: with Postgres the
    bot connects through a local TCP proxy that is then shut (connections cut, new ones
    refused); with SQLite another connection holds the write lock past the busy timeout."""

    def __init__(self, url: str) -> None:
        self.url = url
        self._server: asyncio.Server | None = None
        self._writers: list[asyncio.StreamWriter] = []
        self._lock: sqlite3.Connection | None = None

    async def bot_url(self) -> str:
        parsed = make_url(self.url)
        if parsed.get_backend_name() != "postgresql":
            return self.url
        upstream = (parsed.host or "127.0.0.1", parsed.port or 5432)

        async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except ConnectionError:
                pass
            finally:
                writer.close()

        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            up_reader, up_writer = await asyncio.open_connection(*upstream)
            self._writers += [writer, up_writer]
            await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

        self._server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return parsed.set(host="127.0.0.1", port=port).render_as_string(hide_password=False)

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in self._writers:
                writer.transport.abort()
        else:
            self._lock = sqlite3.connect(make_url(self.url).database or "", isolation_level=None)
            self._lock.execute("BEGIN EXCLUSIVE")

    def end(self) -> None:
        if self._lock is not None:
            self._lock.execute("ROLLBACK")
            self._lock.close()


async def test_while_the_state_database_is_unreachable_questions_are_answered_and_votes_ask_to_retry(
    sample_engine: Engine, settings: Settings, postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    outage = Outage(postgres_url)
    settings = with_state(settings, await outage.bot_url())
    async with local_slack(settings, sample_engine) as local:
        ts = local.standin.post_as_user(demo.GENERAL, demo.BOB, VPN)
        await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, ts), f"Ev{ts}")
        await local.settle()
        [message] = answers(local)

        await outage.cut()
        caplog.clear()
        caplog.set_level(logging.WARNING)
        # a 👎 button and a 👎 reaction: each voter is told, privately, to try again
        await local.slack.click(demo.BOB, demo.GENERAL, buttons(message)[1], message)
        event = {"type": "reaction_added", "user": demo.DAN, "reaction": "-1", "item_user": "U_DOCSBOT",
                 "item": {"type": "message", "channel": demo.GENERAL, "ts": message["ts"]}, "event_ts": ts}
        await local.slack.event(event)
        # a new question is still answered (dedupe and the rate limit fail open)
        ts2 = local.standin.post_as_user(demo.GENERAL, demo.EVE, VPN)
        await local.slack.event(local.slack.mention(demo.EVE, demo.GENERAL, VPN, ts2))
        await local.settle(150)  # on SQLite each state call waits out the 15 s busy timeout, one at a time
        outage.end()

    assert local.standin.responses[-1]["text"] == RETRY and local.standin.responses[-1]["response_type"] == "ephemeral"
    [note] = [e for e in local.standin.calls_to("chat.postEphemeral", ok_only=True) if e["user"] == demo.DAN]
    assert note["text"] == RETRY
    assert len(answers(local)) == 2 and "VPN Setup" in visible_text(answers(local)[1])
    ours = [r for r in caplog.records if r.name.startswith(("bot", "state"))]
    assert any("without dedupe" in r.getMessage() for r in ours)
    assert not [r for r in ours if r.levelno >= logging.ERROR], [r.getMessage() for r in ours]
    assert all(r.exc_info is None for r in ours)  # one line each, no traceback
