"""A scratch Postgres database: created with a random name on a server, dropped afterwards (many
checkouts' tests and benchmarks share one server, so none works in a fixed database)."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from sqlalchemy.engine import make_url


@contextmanager
def scratch_database(server_url: str, prefix: str = "docsbot_test", template: str = "") -> Iterator[str]:
    """Yield the URL of a new database on the server of `server_url`: empty, or a copy of the
    database `template` (whose open sessions are ended first: Postgres copies only an idle one)."""
    admin = make_url(server_url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    conninfo = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        if template:
            conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (template,))
        conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
