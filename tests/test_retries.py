"""The retries, against real parts: the OpenAI stand-in over HTTP, a git repository in a temp dir,
a locked SQLite file, and inserts that lose a race on Postgres to another connection's."""
from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import psycopg
import pytest
from alembic.script import ScriptDirectory

from foundation.wiring import llm_config
from eval.repos import commit_files
from rag import Answer, Diagnostics
from rag.generation import LLMChat, ProviderError
from rag.prompt import Source
from state.answers import AnswerLog
from state.db import _wal, alembic_config, migrate
from state.opening import open_state
from state.ratelimit import RateLimit, RateWindow
from sync.gitcmd import GitError
from sync.workcopy import WorkCopy
from eval.standins.openai_server import Failure, OpenAIStandIn
from tests.support.settings import make_settings
from tests.support.sync import new_repo

T = TypeVar("T")
SOURCES = [Source(1, "Deploy Policy", "Deploy windows", "No deploys on Fridays.")]


def chat(standin: OpenAIStandIn, tmp_path: Path, **overrides: object) -> LLMChat:
    return LLMChat(llm_config(make_settings(tmp_path, openai_base_url=standin.base_url, **overrides)))


def arrivals(standin: OpenAIStandIn) -> list[float]:
    """Where the stand-in notes when each chat request arrives (the reply is made for every one)."""
    times: list[float] = []

    def reply(messages: object) -> str:
        times.append(time.monotonic())
        return "Fine [1]"

    standin.reply = reply
    return times


# -- LLM generation --------------------------------------------------------------------------------

async def test_a_retry_after_that_would_pass_the_deadline_is_not_waited_for(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    openai_standin.failures = [Failure(503, {"Retry-After": "5"})]
    client = chat(openai_standin, tmp_path, llm_total_timeout_s=2.0, llm_max_retries=3)
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"unavailable \(HTTP 503\)") as error:
        await client.generate("q", SOURCES, [])
    assert time.monotonic() - started < 1.5 and len(openai_standin.requests) == 1
    assert error.value.retry_after == 5  # passed on, for the asker


async def test_retry_after_ms_is_honoured(openai_standin: OpenAIStandIn, tmp_path: Path) -> None:
    times = arrivals(openai_standin)
    openai_standin.failures = [Failure(429, {"retry-after-ms": "900"})]  # longer than any first backoff
    assert await chat(openai_standin, tmp_path).generate("q", SOURCES, []) == "Fine [1]"
    assert len(times) == 2 and times[1] - times[0] >= 0.9


async def test_without_retry_after_the_first_backoff_is_half_a_second_plus_jitter(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    times = arrivals(openai_standin)
    openai_standin.failures = [Failure(500)]
    assert await chat(openai_standin, tmp_path, llm_max_retries=1).generate("q", SOURCES, []) == "Fine [1]"
    assert len(times) == 2 and 0.5 <= times[1] - times[0] < 0.75 + 0.2  # 0.5 s × (1 + up to 50%)


async def test_an_attempt_that_timed_out_mid_stream_is_not_retried(
    openai_standin: OpenAIStandIn, tmp_path: Path
) -> None:
    openai_standin.reply = lambda messages: "No deploys on Fridays [1]. " * 10
    openai_standin.stream_piece_chars, openai_standin.stream_gap_s = 5, 0.1  # 5 s in all
    pieces: list[str] = []

    async def sink(piece: str) -> None:
        pieces.append(piece)

    client = chat(openai_standin, tmp_path, llm_attempt_timeout_s=0.5, llm_max_retries=2, llm_stream=True)
    with pytest.raises(ProviderError, match=r"mid-answer \(timed out\)"):
        await client.generate("q", SOURCES, [], sink)
    assert pieces and len(openai_standin.requests) == 1  # the reader saw text: not asked again


# -- git fetch -------------------------------------------------------------------------------------

class _FetchWarnings(logging.Handler):
    """The fetch's warnings; `on_first` runs at the first one, while the fetch waits to retry."""

    def __init__(self, on_first: Callable[[], object] = lambda: None) -> None:
        super().__init__(logging.WARNING)
        self.on_first = on_first
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        if len(self.messages) == 1:
            self.on_first()

    def __enter__(self) -> "_FetchWarnings":
        logging.getLogger("sync.workcopy").addHandler(self)
        return self

    def __exit__(self, *exc_info: object) -> None:
        logging.getLogger("sync.workcopy").removeHandler(self)


def test_a_failed_fetch_is_retried_after_the_backoff_with_a_warning(tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"  # not there yet: created while the fetch waits to retry
    made: list[str] = []
    with _FetchWarnings(lambda: made.append(commit_files(new_repo(upstream), {"a.md": "# A\n"}))) as warnings:
        commit = WorkCopy(tmp_path / "work", str(upstream), retries=3, backoff_s=0.1).fetch()
    assert commit == made[0]
    [line] = warnings.messages
    assert line.startswith(f"fetch from {upstream} failed (") and line.endswith("); retry 1/3 in 0.1s")


def test_a_fetch_that_keeps_failing_raises_after_backing_off_twice_as_long_each_time(tmp_path: Path) -> None:
    started = time.monotonic()
    with _FetchWarnings() as warnings, pytest.raises(GitError, match="git fetch failed"):
        WorkCopy(tmp_path / "work", str(tmp_path / "nowhere"), retries=2, backoff_s=0.1).fetch()
    assert time.monotonic() - started >= 0.3
    assert [line.rsplit(";", 1)[1] for line in warnings.messages] == [" retry 1/2 in 0.1s", " retry 2/2 in 0.2s"]


# -- state database --------------------------------------------------------------------------------

def test_switching_a_locked_sqlite_file_to_wal_is_retried_until_the_lock_is_released(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    opener = sqlite3.connect(path, isolation_level=None)
    opener.execute("PRAGMA busy_timeout = 0")  # "database is locked" at once, as in the race _wal is for
    release = threading.Timer(0.3, holder.execute, ["COMMIT"])
    release.start()
    started = time.monotonic()
    try:
        _wal(opener.cursor())
    finally:
        release.join()
    assert time.monotonic() - started >= 0.3
    assert opener.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    holder.close()
    opener.close()


async def _losing_the_insert_race(postgres_url: str, insert: str, call: Awaitable[T]) -> T:
    """Await `call` while another connection holds `insert` uncommitted: `call`'s insert of the
    same key waits on it, then fails on the key once that commits."""
    async with await psycopg.AsyncConnection.connect(postgres_url) as other, \
            await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as watcher:
        await other.execute(insert)
        task = asyncio.ensure_future(call)
        deadline = time.monotonic() + 5
        while not task.done() and time.monotonic() < deadline:
            waiting = await watcher.execute("SELECT count(*) FROM pg_stat_activity "
                                            "WHERE datname = current_database() AND wait_event_type = 'Lock'")
            if (await waiting.fetchone()) == (1,):
                break
            await asyncio.sleep(0.01)
        assert not task.done(), "the insert did not wait on the other connection's"
        await other.commit()
        return await task


async def test_a_rate_window_another_replica_created_at_the_same_moment_is_locked_and_counted(
    postgres_url: str,
) -> None:
    db = await open_state(postgres_url)
    try:
        limit = RateLimit(db, per_minute=5)
        insert = f"INSERT INTO rate_windows (user_id, stamps) VALUES ('U_BOB', '[{time.time()}]')"
        assert await _losing_the_insert_race(postgres_url, insert, limit.take("U_BOB")) == 0.0
        async with db.begin() as session:
            row = await session.get(RateWindow, "U_BOB")
            assert row is not None and len(row.stamps) == 2  # the other replica's take, and this one
    finally:
        await db.close()


async def test_a_first_vote_whose_row_another_replica_inserted_at_the_same_moment_updates_that_row(
    postgres_url: str,
) -> None:
    db = await open_state(postgres_url)
    try:
        log = AnswerLog(db)
        answer = Answer("q", "No deploys on Fridays [1].", True, None, [], Diagnostics(), "team")
        answer_id = await log.record(answer, asker="U_BOB", asker_level="team", audience_level="team")
        insert = ("INSERT INTO feedback (answer_id, user_id, vote, button_vote, reaction_vote, created_ms, updated_ms)"
                  f" VALUES ('{answer_id}', 'U_BOB', 'up', 'up', '', 1, 1)")
        vote = await _losing_the_insert_race(postgres_url, insert, log.add_feedback(answer_id, "U_BOB", "down",
                                                                                   "reaction"))
        assert (vote.vote, vote.button_vote, vote.reaction_vote) == ("down", "up", "down")
        assert [f.user for f in await log.feedback(answer_id)] == ["U_BOB"]
    finally:
        await db.close()


async def test_a_migration_that_loses_the_race_to_create_the_schema_is_retried(postgres_url: str) -> None:
    insert = "CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL PRIMARY KEY)"
    revision = await _losing_the_insert_race(postgres_url, insert, asyncio.to_thread(migrate, postgres_url))
    assert revision == ScriptDirectory.from_config(alembic_config()).get_current_head()
