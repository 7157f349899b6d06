"""`docsbot status` reads a SQLite state file with the standard library (state.status_rows) and
shows what the state store's own reader shows (issue 56 item 4: SQLAlchemy was most of its
start-up); whatever that read cannot answer goes to the store as before."""
from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from state.leases import Leases
from state.opening import open_state
from state.status_rows import INDEX_WRITER, read_sqlite, sqlite_path
from state.sync_requests import SyncRequests
from state.sync_status import SyncProgress, SyncStatus
from sync.status import recorded_status
from tests.test_cli_startup import loaded_by, one_page_folder


def both(url: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The stdlib read and the store's read of the same file, at the same moment."""
    async def store_read() -> dict[str, Any]:
        db = await open_state(url)
        try:
            return await recorded_status(db)
        finally:
            await db.close()

    stored = asyncio.run(store_read())
    return read_sqlite(url, time.time()), stored


def write(url: str, *steps: str) -> None:
    async def run() -> None:
        db = await open_state(url)
        try:
            for step in steps:
                if step == "synced":
                    await SyncStatus(db).record(True, {"mode": "reconcile", "added": 2, "skipped": []})
                elif step == "failed":
                    await SyncStatus(db).record(False, error="disk full")
                elif step == "leased":
                    assert await Leases(db).acquire(INDEX_WRITER, "host-1", 60)
                elif step == "embedding":
                    await SyncProgress(db).report("host-1", 40, 100)
                elif step == "orphaned":
                    await SyncProgress(db).report("host-dead", 3, 9)
                elif step == "requested":
                    await SyncRequests(db).request("webhook")
        finally:
            await db.close()

    asyncio.run(run())


@pytest.mark.parametrize("steps", [(), ("synced",), ("synced", "failed", "requested", "requested"),
                                   ("synced", "leased", "embedding", "requested"), ("failed", "orphaned")])
def test_the_stdlib_read_equals_the_stores(tmp_path: Path, steps: tuple[str, ...]) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    write(url, *steps)
    quick, stored = both(url)
    assert quick == stored
    assert quick is not None and (quick["last_sync"] is not None) == bool(steps)


def test_what_the_stdlib_read_cannot_answer_goes_to_the_store(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'state.db'}"
    assert read_sqlite(url, time.time()) is None  # no file yet: the store creates and migrates it
    write(url, "synced")
    with sqlite3.connect(tmp_path / "state.db") as connection:
        connection.execute("UPDATE alembic_version SET version_num = '0001'")
    assert read_sqlite(url, time.time()) is None  # an older schema: the store migrates it first
    assert sqlite_path("postgresql://postgres@127.0.0.1/test") is None
    assert sqlite_path(f"{url}?timeout=3") is None
    (tmp_path / "junk.db").write_text("not a database")
    assert read_sqlite(f"sqlite:///{tmp_path / 'junk.db'}", time.time()) is None


def test_status_on_a_sqlite_state_loads_no_sqlalchemy(tmp_path: Path) -> None:
    import subprocess
    import sys

    env = one_page_folder(tmp_path)
    subprocess.run([sys.executable, "-m", "commands.cli", "sync"], env=env, check=True, capture_output=True)
    assert loaded_by(["status"], ("sqlalchemy", "psycopg", "alembic", "lancedb", "pyarrow"), env) == []
    done = subprocess.run([sys.executable, "-m", "commands.cli", "status"], env=env, capture_output=True, text=True,
                          check=True)
    assert "documents: 1, chunks: 1" in done.stdout and "last sync: ok" in done.stdout
