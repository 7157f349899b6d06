"""Filtered dense search on the Postgres index when the filter is selective (issue 56 item 2):
readers of a level that passes few rows search a partial HNSW graph of those rows
(pg_tables.maintain), and recall@16 against exact search holds for them and for the rest."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import sqlalchemy as sa

from rag import IndexConfig, open_index
from rag.store import chunk_schema
from rag.store.pg_tables import CHUNKS, driver_url, vector_literal
from rag.store.schema import ROW_DEFAULTS
from tests.support.pgvector import index_database

DIM, ROWS, K = 32, 4_000, 16
PUBLIC, TEAM = 0.04, 0.50  # shares of the rows at each level; the rest restricted


def rows(rng: np.random.Generator) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """Clustered unit vectors (as embeddings are), levels by page of 10 chunks."""
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    vectors = centres[rng.integers(0, 40, ROWS)] + 0.6 * rng.standard_normal((ROWS, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    page = rng.random(ROWS // 10)
    ranks = np.repeat(np.where(page < PUBLIC, 0, np.where(page < PUBLIC + TEAM, 1, 2)), 10).astype(np.int8)
    data = [{n: ROW_DEFAULTS.get(n, "") for n in chunk_schema(DIM).names} | {
        "chunk_id": f"c{i}", "doc_path": f"p{i // 10}.md", "ordinal": i % 10, "access_rank": int(ranks[i]),
        "search_text": "text", "vector": vectors[i]} for i in range(ROWS)]
    return pa.Table.from_pylist(data, schema=chunk_schema(DIM)), vectors, ranks


async def test_a_selective_level_searches_its_own_graph_and_keeps_recall(pgvector_server: str) -> None:
    rng = np.random.default_rng(7)
    table, vectors, ranks = rows(rng)
    with index_database(pgvector_server) as url:
        store = open_index(IndexConfig("", "", None, 0, url))
        store.write(table, None)
        store.maintain(0)
        engine = sa.create_engine(driver_url(url))
        try:
            with engine.connect() as c:
                indexes = set(c.execute(sa.text("SELECT indexname FROM pg_indexes WHERE tablename = :t"),
                                        {"t": CHUNKS}).scalars())
                plan = " ".join(c.execute(sa.text(
                    f"EXPLAIN SELECT chunk_id FROM {CHUNKS} WHERE access_rank <= 0 ORDER BY "
                    f"vector::vector({DIM}) <=> CAST(:q AS vector({DIM})) LIMIT {K}"),
                    {"q": vector_literal(vectors[0])}).scalars())
        finally:
            engine.dispose()
        # public readers (4% of the rows) get a graph of their own; team readers (54%) do not
        assert f"ix_{CHUNKS}_hnsw_{DIM}_upto_0" in indexes and f"ix_{CHUNKS}_hnsw_{DIM}_upto_1" not in indexes
        assert f"ix_{CHUNKS}_hnsw_{DIM}_upto_0" in plan, plan
        for max_rank in (0, 1, 2):
            recalls = []
            for query in vectors[rng.choice(ROWS, 30, replace=False)]:
                exact = np.argsort(-np.where(ranks <= max_rank, vectors @ query, -np.inf))[:K]
                hits = await store.dense(query, max_rank, K)
                assert all(h.row["access_rank"] <= max_rank for h in hits)
                recalls.append(len({int(h.row["chunk_id"][1:]) for h in hits} & set(exact.tolist())) / K)
            assert np.mean(recalls) >= 0.95, (max_rank, np.mean(recalls))
