"""A big write into the Postgres index is loaded without its search indexes (rag/store/pg_indexes.py):
they are dropped before the rows are merged, searches stay right meanwhile (an exact scan), and
maintain() builds them again; a small write keeps them and updates them as it inserts."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import pyarrow as pa
import sqlalchemy as sa

from rag import IndexConfig, open_index
from rag.store import Index, chunk_schema
from rag.store.pg_indexes import BULK_MIN_ROWS, TEXT_INDEXES
from rag.store.pg_tables import CHUNKS, driver_url, vector_literal
from rag.store.schema import ROW_DEFAULTS
from tests.support.pgvector import index_database

DIM, K, PAGE = 32, 16, 10
WORDS = [f"word{n}" for n in range(300)]
CENTRES = np.random.default_rng(0).standard_normal((30, DIM)).astype(np.float32)


def pages(first: int, count: int, seed: int) -> tuple[pa.Table, np.ndarray]:
    """`count` pages of PAGE chunks from page number `first`: clustered unit vectors, a few words
    each; pages alternate between two access ranks."""
    rng = np.random.default_rng(seed)
    rows = count * PAGE
    vectors = CENTRES[rng.integers(0, len(CENTRES), rows)] + 0.6 * rng.standard_normal((rows, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    data = [{n: ROW_DEFAULTS.get(n, "") for n in chunk_schema(DIM).names} | {
        "chunk_id": f"p{first + i // PAGE}#{i % PAGE}", "doc_path": f"p{first + i // PAGE}.md", "ordinal": i % PAGE,
        "access_rank": (first + i // PAGE) % 2 + 1, "search_text": " ".join(rng.choice(WORDS, 12)),
        "vector": vectors[i]} for i in range(rows)]
    return pa.Table.from_pylist(data, schema=chunk_schema(DIM)), vectors


@contextmanager
def catalog(url: str) -> Iterator[sa.Connection]:
    engine = sa.create_engine(driver_url(url), poolclass=sa.NullPool)
    try:
        with engine.connect() as c:
            yield c
    finally:
        engine.dispose()


def indexes(url: str) -> dict[str, int]:
    """The search indexes there are (HNSW graphs and the text indexes), each with its OID: an
    index dropped and made again has a new one."""
    with catalog(url) as c:
        return dict(c.execute(sa.text(
            "SELECT i.indexname, c.oid::bigint FROM pg_indexes i JOIN pg_class c ON c.relname = i.indexname "
            "WHERE (i.tablename = :t AND i.indexdef LIKE '% USING hnsw %') OR i.indexname = ANY(:text)"),
            {"t": CHUNKS, "text": list(TEXT_INDEXES)}).all())


def plan(url: str, vector: np.ndarray) -> str:
    with catalog(url) as c:
        return " ".join(c.execute(sa.text(
            f"EXPLAIN SELECT chunk_id FROM {CHUNKS} WHERE access_rank <= 2 ORDER BY "
            f"vector::vector({DIM}) <=> CAST(:q AS vector({DIM})) LIMIT {K}"), {"q": vector_literal(vector)}).scalars())


async def recall(store: Index, ids: list[str], vectors: np.ndarray, queries: np.ndarray) -> float:
    """Mean recall@K of the store's dense search (reader sees every row) against numpy's exact top K."""
    shares = []
    for query in queries:
        exact = {ids[i] for i in np.argsort(-(vectors @ query))[:K]}
        shares.append(len({h.row["chunk_id"] for h in await store.dense(query, 2, K)} & exact) / K)
    return float(np.mean(shares))


async def test_a_big_write_loads_without_the_search_indexes_and_maintain_builds_them_again(
        pgvector_server: str) -> None:
    first, first_vectors = pages(0, 240, seed=1)
    more, more_vectors = pages(240, 240, seed=2)
    assert more.num_rows >= BULK_MIN_ROWS  # and half the table: a bulk write
    ids = first["chunk_id"].to_pylist() + more["chunk_id"].to_pylist()
    vectors = np.concatenate([first_vectors, more_vectors])
    queries = vectors[np.random.default_rng(3).choice(len(vectors), 30, replace=False)]
    with index_database(pgvector_server) as url:
        store = open_index(IndexConfig("", "", None, 0, url))
        store.write(first, first["doc_path"].unique().to_pylist())
        store.maintain(0)
        built = indexes(url)
        assert f"ix_{CHUNKS}_hnsw_{DIM}" in built and set(TEXT_INDEXES) <= set(built)

        store.write(more, more["doc_path"].unique().to_pylist())
        assert indexes(url) == {}  # dropped before the rows went in
        assert await recall(store, ids, vectors, queries) == 1.0  # an exact scan meanwhile
        assert [h.row["chunk_id"] for h in await store.text("word7 word8", 2, K)]  # the postings read without index

        store.maintain(0)
        rebuilt = indexes(url)
        assert set(rebuilt) == set(built) and not set(rebuilt.values()) & set(built.values())
        assert f"ix_{CHUNKS}_hnsw_{DIM}" in plan(url, queries[0])
        assert await recall(store, ids, vectors, queries) >= 0.95

        changed, changed_vectors = pages(100, 1, seed=4)  # one document rewritten: a one-file sync
        store.write(changed, ["p100.md"])
        assert indexes(url) == rebuilt  # the same indexes, not dropped
        store.maintain(0)
        assert indexes(url) == rebuilt
        for row, vector in zip(changed["chunk_id"].to_pylist(), changed_vectors):  # found through the graph
            assert (await store.dense(vector, 2, 1))[0].row["chunk_id"] == row
