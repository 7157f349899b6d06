"""The state database: where it is, schema migrations on both backends, and unreachable servers."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import inspect, text

from foundation.errors import UserError
from eval.bench_acks import free_port
from sqlalchemy.ext.asyncio import async_sessionmaker

from foundation.wiring import database_url
from state import db as state_db
from state.db import StateDB, StateUnavailable, _async_engine, alembic_config, migrate, redacted
from state.opening import open_state
from tests.support.settings import REPO, make_settings

HEAD = ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_the_head_revision_read_without_alembic_is_alembics() -> None:
    # A current database is opened without Alembic; that must not skip a migration added later.
    assert state_db.HEAD == HEAD


def test_the_default_is_a_sqlite_file_beside_a_local_index(tmp_path: Path) -> None:
    assert database_url(make_settings(tmp_path / "idx")) == f"sqlite:///{(tmp_path / 'idx' / 'state.db').resolve()}"
    assert database_url(make_settings(tmp_path / "idx", database_url="postgresql://u:p@h/db")) == "postgresql://u:p@h/db"


def test_an_index_on_object_storage_needs_a_work_dir_or_a_database_url(tmp_path: Path) -> None:
    assert database_url(make_settings("s3://bucket/x", work_dir=str(tmp_path))).endswith(f"{tmp_path}/state.db")
    with pytest.raises(UserError, match="set DOCSBOT_DATABASE_URL"):
        database_url(make_settings("s3://bucket/x"))


async def test_open_state_migrates_once_and_again_is_a_no_op(state_url: str) -> None:
    assert migrate(state_url) == HEAD
    db = await open_state(state_url)
    try:
        tables = await _tables(db)
        assert {"answers", "feedback", "dedupe_keys", "rate_windows", "alembic_version"} <= tables
    finally:
        await db.close()
    assert migrate(state_url) == HEAD


async def test_two_processes_starting_on_an_empty_database_both_migrate(state_url: str) -> None:
    code = "import sys; from state.db import migrate; print(migrate(sys.argv[1]))"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = [subprocess.Popen([sys.executable, "-c", code, state_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=env, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=60) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert [o[0].strip() for o in outs] == [HEAD, HEAD]


def test_docsbot_migrate_command(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSBOT_")}
    env |= {"PYTHONPATH": str(REPO), "DOCSBOT_DATA_DIR": str(tmp_path / "idx")}
    done = subprocess.run([sys.executable, "-m", "commands.cli", "migrate"], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"state database schema at revision {HEAD}"
    assert (tmp_path / "idx" / "state.db").is_file()


def test_an_unreachable_server_is_one_line_without_the_password(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCSBOT_")}
    env |= {"PYTHONPATH": str(REPO), "DOCSBOT_DATA_DIR": str(tmp_path / "idx"),
            "DOCSBOT_DATABASE_URL": "postgresql://bot:hunter2@127.0.0.1:9/state"}
    done = subprocess.run([sys.executable, "-m", "commands.cli", "migrate"], env=env, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "docsbot: error: state database postgresql://bot:***@127.0.0.1:9/state is unavailable")
    assert len(done.stderr.strip().splitlines()) == 1 and "hunter2" not in done.stderr


@pytest.mark.parametrize("url", ["", "  ", "not a url"])
def test_an_empty_or_malformed_database_url_ends_serve_in_one_line(tmp_path: Path, url: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "SLACK_"))}
    env |= {"PYTHONPATH": str(REPO), "DOCSBOT_DATA_DIR": str(tmp_path / "idx"), "DOCSBOT_DATABASE_URL": url,
            "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "secret", "SLACK_API_URL": "http://127.0.0.1:9/",
            "PORT": str(free_port())}
    done = subprocess.run([sys.executable, "-m", "commands.cli", "serve"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("docsbot: error: DOCSBOT_DATABASE_URL is "), done.stderr[-2000:]
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr[-2000:]


async def test_an_unreachable_server_raises_state_unavailable_at_open_and_in_a_transaction() -> None:
    url = "postgresql://bot:hunter2@127.0.0.1:9/state"
    with pytest.raises(StateUnavailable, match=r"postgresql://bot:\*\*\*@127.0.0.1:9/state is unavailable"):
        await open_state(url)
    engine = _async_engine(url)  # as if the server went away after the process started
    db = StateDB(engine, async_sessionmaker(engine), redacted(url))
    with pytest.raises(StateUnavailable, match="is unavailable"):
        async with db.begin() as session:
            await session.execute(text("SELECT 1"))
    await db.close()


async def _tables(db) -> set[str]:  # type: ignore[no-untyped-def]
    async with db.engine.connect() as conn:
        return set(await conn.run_sync(lambda c: inspect(c).get_table_names()))

