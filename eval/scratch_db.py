"""A scratch Postgres database: created with a random name on a server, dropped afterwards (many
checkouts' tests and benchmarks share one server, so none works in a fixed database)."""
from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
from sqlalchemy.engine import make_url


@contextmanager
def scratch_database(server_url: str, prefix: str = "docsbot_test") -> Iterator[str]:
    """Yield the URL of a new, empty database on the server of `server_url`."""
    admin = make_url(server_url)
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    conninfo = admin.set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
