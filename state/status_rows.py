"""What the sync status rows mean, and a read of them from a SQLite state file with the standard
library alone.

`docsbot status` on a single host reads four small rows; importing SQLAlchemy and its async
driver to do so cost 0.5-0.7 s of its start-up (issue 56 item 4). So the rows' meaning lives here,
without SQLAlchemy, and state.sync_status / state.leases (the store every other reader and every
writer uses) call the same functions; `read_sqlite` returns None, and the caller opens the store
as usual, whenever the file is not a current SQLite state (absent, another schema revision,
unreadable, locked), so that the full path migrates, imports and explains errors as before."""
from __future__ import annotations

import json
import sqlite3
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

INDEX = "index"  # one status row per index; there is one today
INDEX_WRITER = "index-writer"  # the lease held by the one process writing the index
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# The newest revision: the scripts are numbered in order ("0004_…py" is revision "0004", tests hold
# alembic to that), so a process whose database is current needs no Alembic (0.7-0.9 s of imports).
HEAD = max(script.name.split("_", 1)[0] for script in (MIGRATIONS / "versions").glob("[0-9]*_*.py"))
SQLITE_PREFIXES = ("sqlite:///", "sqlite+aiosqlite:///", "sqlite+pysqlite:///")


def iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


def last_sync(ok: bool, at: float, error: str | None, report: dict[str, Any] | None,
              last_success_at: float | None) -> dict[str, Any]:
    """The `sync_status` row as status shows it."""
    return {"last_sync": {"ok": bool(ok), "at": iso(at), "error": error, "report": report},
            "last_success_at": iso(last_success_at)}


NEVER_SYNCED: dict[str, Any] = {"last_sync": None, "last_success_at": None}


def live(expires_at: float, now: float) -> bool:
    """Whether a lease expiring at `expires_at` is still held at `now`."""
    return expires_at > now


def progress(holder: str, done: int, total: int, live_holder: str | None) -> tuple[dict[str, int] | None, str | None]:
    """What a `sync_progress` row says given `live_holder` (the index-writer lease's holder now):
    the {"done", "total"} of its run once embedding has begun (else None), and the holder of a run
    that stopped before it finished (else None). A row is written when a run starts and deleted
    when it ends, however it ends; one left by a writer that no longer holds the lease is a run
    whose process died or was cut off (a full disk, a kill) before saying how it ended."""
    if live_holder is None or holder != live_holder:
        return None, holder
    return ({"done": done, "total": total} if total else None), None


def sqlite_path(url: str) -> Path | None:
    """The file of a plain `sqlite:///path` URL; None for anything else (Postgres, query options)."""
    prefix = next((p for p in SQLITE_PREFIXES if url.startswith(p)), None)
    if prefix is None or "?" in url or url == prefix:
        return None
    return Path(url[len(prefix):])


def read_sqlite(url: str, now: float) -> dict[str, Any] | None:
    """The recorded part of the status (sync.status.recorded_status's keys) read from a SQLite
    state file at schema revision HEAD, read-only; None when the file is not that."""
    path = sqlite_path(url)
    if path is None or not path.is_file():
        return None
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return None
    try:
        with connection:
            return _read(connection, now)
    except (sqlite3.Error, ValueError):  # locked, damaged, another schema: the full path says which
        return None
    finally:
        connection.close()


def _read(connection: sqlite3.Connection, now: float) -> dict[str, Any] | None:
    if connection.execute("SELECT version_num FROM alembic_version").fetchone() != (HEAD,):
        return None
    row = connection.execute("SELECT ok, at, error, report, last_success_at FROM sync_status WHERE name = ?",
                             (INDEX,)).fetchone()
    recorded = NEVER_SYNCED if row is None else last_sync(row[0], row[1], row[2],
                                                         None if row[3] is None else json.loads(row[3]), row[4])
    lease = connection.execute("SELECT holder, acquired_at, expires_at FROM leases WHERE name = ?",
                               (INDEX_WRITER,)).fetchone()
    holder = lease[0] if lease is not None and live(lease[2], now) else None
    running = connection.execute("SELECT holder, done, total FROM sync_progress WHERE name = ?", (INDEX,)).fetchone()
    syncing, stopped = (None, None) if running is None else progress(running[0], running[1], running[2], holder)
    pending = connection.execute("SELECT count(*) FROM sync_requests WHERE finished_at IS NULL").fetchone()[0]
    return {**recorded, "writer": holder, "writer_since": iso(lease[1]) if holder is not None else None,
            "syncing": syncing, "stopped": stopped, "pending_requests": pending}
