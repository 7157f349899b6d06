"""Where the state database is, how to connect to it, and keeping its schema current.

Everything dialect-specific lives here, in one place: plain URLs (`postgresql://…`,
`sqlite:///path`) are mapped to the drivers we ship (psycopg 3, aiosqlite/pysqlite), and SQLite
connections get WAL (with synchronous=NORMAL), a busy timeout, foreign keys, one connection per
process and `BEGIN IMMEDIATE` transactions. The last
makes a SQLite transaction take the write lock when it starts, so a read-then-write transaction
serializes against other processes the way `SELECT … FOR UPDATE` does on Postgres: the
repositories are written once, for both.
"""
from __future__ import annotations

import asyncio
import os
import socket
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, create_engine, event, inspect, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import (ArgumentError, DBAPIError, IntegrityError, InterfaceError, OperationalError,
                            ProgrammingError)
from sqlalchemy.exc import TimeoutError as PoolTimeout  # not the builtin TimeoutError
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from tenacity import (retry, retry_if_exception, retry_if_exception_type, stop_after_attempt, stop_after_delay,
                      wait_fixed)

from state.errors import StateConfigError
from state.status_rows import HEAD, MIGRATIONS

if TYPE_CHECKING:
    import psycopg
    from psycopg.abc import RV, PQGen
    from alembic.config import Config

# SQLite's busy handler polls with growing sleeps rather than queueing, so a process can miss
# the lock for seconds while another runs a burst of short transactions (measured: 5 s ran out
# with two processes casting 20 votes each at load 5 on 2 cores). A wait past Slack's 3 s ack
# is no worse than a StateUnavailable, and SQLite is the single-host default, not the service's.
SQLITE_BUSY_TIMEOUT_MS = 15_000
# A Postgres that accepts connections and never answers (frozen, or behind a network that drops
# packets) must not hold a question for long: each step of a state operation is bounded, so it
# ends in StateUnavailable (and the bot fails open) within POSTGRES_POOL_TIMEOUT_S +
# POSTGRES_ANSWER_TIMEOUT_S + POSTGRES_CONNECT_TIMEOUT_S at worst: 5 s once the pool holds a
# connection, 2 s for each operation after the first has found the server silent. Every statement
# here takes milliseconds (dedupe keys, rate windows, one answer row), so these are 100x margins.
# A new connection: libpq's floor (a reachable server completes the handshake in milliseconds).
POSTGRES_CONNECT_TIMEOUT_S = 2
# Server side: a statement still running (or waiting for a row lock) after 2 s fails with an error
# and the connection stays usable; below the answer timeout, so a slow server says so first.
POSTGRES_STATEMENT_TIMEOUT_MS = 2_000
# Client side: no reply to one round trip (statement, commit, pool pre-ping) within 3 s and the
# connection is hung up; neither the statement timeout nor TCP keepalives see a silent server.
POSTGRES_ANSWER_TIMEOUT_S = 3.0
# Server side: a transaction whose client went silent ends after 10 s, releasing its row locks
# (a rate window, a vote) for the other replicas instead of holding them until TCP gives up.
POSTGRES_IDLE_IN_TRANSACTION_TIMEOUT_MS = 10_000
# Waiting for a free pooled connection (15 per process). Not the 2 s of a single statement: two
# processes claiming keys in a burst on a busy machine waited past 2 s for a healthy pool (CI).
POSTGRES_POOL_TIMEOUT_S = 10.0
# Errors that mean "the database cannot be reached (or is locked)", not "the request was wrong",
# for an error that carries no SQLSTATE (the driver's own, a socket's). A pool TimeoutError: no
# connection came free in time (SQLite's one connection held by a transaction waiting out a locked file).
UNREACHABLE = (OperationalError, InterfaceError, OSError, PoolTimeout)
# A Postgres error is read by its SQLSTATE (PostgreSQL's appendix A), whatever DB-API class psycopg
# gives it: these classes say the server will not do the work as things stand (connection,
# read-only or timed-out transaction, login, database or schema gone, serialization or deadlock,
# disk or memory full, lock not available, statement timeout or shutdown, I/O, configuration,
# corruption), which the operator fixes, not the code...
UNAVAILABLE_SQLSTATE_CLASSES = frozenset({"08", "25", "28", "3D", "3F", "40", "53", "55", "57", "58", "F0", "XX"})
# ...and in class 42 ("syntax error or access rule violation") these codes: the role lacks a
# privilege, or the schema is not the one this code migrated to (a table or column gone). Every
# other SQLSTATE (a syntax error, a bad value, a constraint) is a bug in a statement, raised as it is.
UNAVAILABLE_SQLSTATES = frozenset({"42501", "42P01", "42703"})  # insufficient_privilege, undefined_table/column
# SQLite's own: a damaged file, or one that is no database (its other "cannot" results, a locked,
# read-only, full or unopenable file, are OperationalErrors already).
UNAVAILABLE_SQLITE_CODES = frozenset({sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB})
# A transaction whose INSERT lost a race (another replica, or task, inserted the same key at the
# same moment) fails on the key; run once more, it finds that row, and locks it, instead.
retry_insert_race = retry(retry=retry_if_exception_type(IntegrityError), stop=stop_after_attempt(2), reraise=True)


class StateUnavailable(RuntimeError):
    """The state database cannot be reached, or refuses the work (a privilege revoked, a read-only
    server, a full disk: see `refused`); callers decide (dedupe fails open, votes ask to retry)."""


def refused(exc: BaseException) -> bool:
    """Whether a driver error means the state database is unavailable rather than a statement is
    wrong: by its SQLSTATE where it has one, SQLite's result code, else its kind (UNREACHABLE)."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str) and len(sqlstate) == 5:
        return sqlstate[:2] in UNAVAILABLE_SQLSTATE_CLASSES or sqlstate in UNAVAILABLE_SQLSTATES
    code = getattr(orig, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in UNAVAILABLE_SQLITE_CODES:
        return True
    return isinstance(exc, UNREACHABLE)


def redacted(url: str) -> str:
    """The URL with its password hidden, for messages."""
    return _parsed(url).render_as_string(hide_password=True)


def _parsed(url: str) -> URL:
    """The URL, or one line saying it is none (an empty DOCSBOT_DATABASE_URL was a traceback)."""
    try:
        return make_url(url)
    except ArgumentError:
        what = "is empty" if not url.strip() else "is not a database URL"
        raise StateConfigError(f"DOCSBOT_DATABASE_URL {what}: use postgresql://user:password@host/db or "
                               "sqlite:///path/state.db, or unset it for a SQLite file beside the index") from None


def _driver_url(url: str, *, is_async: bool) -> URL:
    parsed = _parsed(url)
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+psycopg")
    if backend == "sqlite":
        if parsed.database and parsed.database != ":memory:":
            Path(parsed.database).parent.mkdir(parents=True, exist_ok=True)
        return parsed.set(drivername="sqlite+aiosqlite" if is_async else "sqlite+pysqlite")
    raise StateConfigError(f"unsupported DOCSBOT_DATABASE_URL scheme {parsed.drivername!r} (use postgresql:// or sqlite:///)")


@cache
def _hanging_up_connection() -> type[psycopg.AsyncConnection[Any]]:
    """psycopg's connection class that hangs up on a server that leaves one round trip unanswered
    for POSTGRES_ANSWER_TIMEOUT_S: the call waiting then fails at once with an OperationalError,
    and the broken connection is a disconnect to SQLAlchemy, which drops it from the pool.
    (Cancelling the call instead makes psycopg ask the server to cancel and wait for that: 10 s
    more.) A wait its caller bounds (`notifies(timeout=…)`: a healthy server may send nothing for
    long) keeps that bound. Made on the first Postgres connection: psycopg's ~0.1 s of imports
    are not paid by a process whose state database is SQLite."""
    import psycopg

    class HangingUpConnection(psycopg.AsyncConnection[Any]):
        async def wait(self, gen: PQGen[RV], *args: Any, **kwargs: Any) -> RV:
            if kwargs.get("timeout") is not None:
                return await super().wait(gen, *args, **kwargs)
            loop = asyncio.get_running_loop()
            hang_up = loop.call_later(POSTGRES_ANSWER_TIMEOUT_S, _shut_down, self.pgconn.socket)
            try:
                return await super().wait(gen, *args, **kwargs)
            except psycopg.OperationalError as exc:
                if hang_up.when() > loop.time():
                    raise
                raise psycopg.OperationalError(
                    f"no answer from the server within {POSTGRES_ANSWER_TIMEOUT_S:g} s") from exc
            finally:
                hang_up.cancel()

    return HangingUpConnection


def _shut_down(fd: int) -> None:
    """Shut the socket down both ways: the waiting read sees end-of-file and libpq marks the
    connection lost (the descriptor itself stays libpq's to close)."""
    with suppress(OSError), socket.socket(fileno=os.dup(fd)) as sock:
        sock.shutdown(socket.SHUT_RDWR)


def _postgres_connect(url: URL) -> Callable[[], Awaitable[psycopg.AsyncConnection[Any]]]:
    """New serving connections: bounded handshake, server-side timeouts (ahead of any `options`
    in the URL, which then win), and the client-side hang-up above."""
    conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
    timeouts = (f"-c statement_timeout={POSTGRES_STATEMENT_TIMEOUT_MS} "
                f"-c idle_in_transaction_session_timeout={POSTGRES_IDLE_IN_TRANSACTION_TIMEOUT_MS}")
    from psycopg.conninfo import conninfo_to_dict

    options = f"{timeouts} {conninfo_to_dict(conninfo).get('options', '')}".strip()

    async def connect() -> psycopg.AsyncConnection[Any]:
        return await _hanging_up_connection().connect(conninfo, connect_timeout=POSTGRES_CONNECT_TIMEOUT_S,
                                                      options=options)

    return connect


async def own_connection(db: StateDB) -> psycopg.AsyncConnection[Any]:
    """A Postgres connection outside the pool, in autocommit (the sync worker's LISTEN), with the
    pool's bounds: a silent server is hung up on instead of holding its caller forever."""
    connection = await _postgres_connect(db.engine.url)()
    await connection.set_autocommit(True)
    return connection


def _engine_options(url: URL, *, is_async: bool) -> dict[str, Any]:
    if url.get_backend_name() == "postgresql" and is_async:
        return {"pool_pre_ping": True, "pool_timeout": POSTGRES_POOL_TIMEOUT_S, "async_creator": _postgres_connect(url)}
    if url.get_backend_name() == "postgresql":
        # Migrations (the only use of a sync engine) may run long statements: the handshake is bounded.
        return {"pool_pre_ping": True, "connect_args": {"connect_timeout": POSTGRES_CONNECT_TIMEOUT_S}}
    # SQLite has one writer at a time, and every transaction here takes the write lock: one
    # connection per process queues them in order, where several would contend through SQLite's
    # busy handler, which sleeps and retries (measured: mention acks at p99 4.4 s under 50
    # concurrent mentions with 15 connections). Other processes still wait via busy_timeout.
    # A request queued behind it waits no longer than the busy timeout either.
    return {"pool_size": 1, "max_overflow": 0, "pool_timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}


def _locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


@retry(retry=retry_if_exception(_locked), stop=stop_after_delay(SQLITE_BUSY_TIMEOUT_MS / 1000), wait=wait_fixed(0.05),
       reraise=True)
def _wal(cursor: Any) -> None:
    """Switch to WAL. Two processes opening a new file at once race for it, and SQLite answers
    "database is locked" at once instead of waiting through the busy timeout: retry briefly."""
    cursor.execute("PRAGMA journal_mode = WAL")


def _configure_sqlite(engine: Engine) -> None:
    """WAL, busy timeout, foreign keys, and transactions that take the write lock at BEGIN."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves, below
        cursor = dbapi_connection.cursor()
        cursor.execute(f"PRAGMA busy_timeout = {SQLITE_BUSY_TIMEOUT_MS}")
        _wal(cursor)
        # SQLite's advice for WAL: no fsync per commit (a power cut may lose the last commits,
        # never corrupt the file); a commit goes from ~10 ms to well under 1 ms.
        cursor.execute("PRAGMA synchronous = NORMAL")
        cursor.execute("PRAGMA foreign_keys = ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")


def _sync_engine(url: str) -> Engine:
    driver = _driver_url(url, is_async=False)
    engine = create_engine(driver, **_engine_options(driver, is_async=False))
    if driver.get_backend_name() == "sqlite":
        _configure_sqlite(engine)
    return engine


def _async_engine(url: str) -> AsyncEngine:
    driver = _driver_url(url, is_async=True)
    engine = create_async_engine(driver, **_engine_options(driver, is_async=True))
    if driver.get_backend_name() == "sqlite":
        _configure_sqlite(engine.sync_engine)
    return engine


def alembic_config(connection: Any = None) -> Config:
    """Alembic's configuration, built in code: the scripts are package data, no alembic.ini."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@retry(retry=retry_if_exception_type((IntegrityError, ProgrammingError)), stop=stop_after_attempt(3), reraise=True)
def _upgrade(engine: Engine) -> str:
    """One migration transaction; a duplicate table or row (another process migrating) is retried."""
    from alembic import command
    from alembic.runtime.migration import MigrationContext

    with engine.begin() as connection:
        command.upgrade(alembic_config(connection), "head")
        return MigrationContext.configure(connection).get_current_revision() or ""


def _revision(engine: Engine) -> str | None:
    """The schema's revision, read without Alembic; None for a database that has none yet."""
    with engine.connect() as connection:
        if not inspect(connection).has_table("alembic_version"):
            return None
        return connection.execute(text("SELECT version_num FROM alembic_version")).scalar()


def migrate(url: str) -> str:
    """Bring the schema to the latest revision (a no-op when it is there); returns that revision.

    Two processes starting on an empty Postgres at once both try to create the tables; the loser's
    transaction fails on the duplicate and is simply retried, finding the schema current."""
    engine = _sync_engine(url)
    try:
        return HEAD if _revision(engine) == HEAD else _upgrade(engine)
    except Exception as exc:
        if not refused(exc):
            raise
        raise unavailable(redacted(url), exc) from None
    finally:
        engine.dispose()


def unavailable(name: str, exc: BaseException) -> StateUnavailable:
    """One line naming the database (password hidden) and the driver's first line of reason."""
    lines = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    return StateUnavailable(f"state database {name} is unavailable: {lines[0] if lines else type(exc).__name__}")


@dataclass
class StateDB:
    """One process's connection pool to the state database."""

    engine: AsyncEngine
    session: async_sessionmaker[AsyncSession]
    # Shown in messages; the password is already hidden.
    name: str

    @asynccontextmanager
    async def begin(self, durable: bool = True) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction (committed on exit); an unreachable, locked or
        refusing database (`refused`) raises StateUnavailable instead of a driver error.

        `durable=False` is for writes whose loss in a server crash is harmless (dedupe keys, rate
        windows): on
        Postgres the commit then does not wait for the WAL flush (`synchronous_commit`), which
        is most of a write's latency (12 ms → 1-2 ms measured here); SQLite is unchanged."""
        try:
            async with self.session() as session, session.begin():
                if not durable and self.engine.dialect.name == "postgresql":
                    await session.execute(text("SET LOCAL synchronous_commit TO OFF"))
                yield session
        except Exception as exc:
            if not refused(exc):
                raise
            raise unavailable(self.name, exc) from None

    async def close(self) -> None:
        await self.engine.dispose()


def connect(url: str) -> StateDB:
    """A StateDB on `url`, whose schema is already migrated (state.opening.open_state does both)."""
    engine = _async_engine(url)
    return StateDB(engine, async_sessionmaker(engine, expire_on_commit=False), redacted(url))
