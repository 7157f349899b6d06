"""The Postgres index's text list at the speed of an index (rag/store/postgres.py, migration 0014):
what BM25 needs is kept by the writes, and a search scores only the rows its terms' postings rank
best. Rows here hold words drawn from a skewed vocabulary, so the common words are in more rows
than a posting list keeps (2 × 256) and the lists are cut; the writes come in batches, then
documents are replaced and deleted, as syncs do."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import sqlalchemy as sa

from rag import IndexConfig, open_index
from rag.store import chunk_schema
from rag.store.pg_tables import CHUNKS, TERMS, TEXT_STATS, driver_url
from rag.store.schema import ROW_DEFAULTS
from tests.support.pgvector import index_database

DIM = 4
VOCABULARY = [f"word{n}" for n in range(400)]


def pages(names: list[str], seed: int, rank: int = 1, per_page: int = 4) -> pa.Table:
    """`per_page` chunks per page, each 20-120 words drawn with Zipf-like weights."""
    rng = np.random.default_rng(seed)
    weights = 1 / np.arange(1, len(VOCABULARY) + 1) ** 1.1
    weights /= weights.sum()
    data = []
    for name in names:
        for i in range(per_page):
            words = rng.choice(VOCABULARY, size=int(rng.integers(20, 120)), p=weights)
            vector = rng.standard_normal(DIM).astype(np.float32)
            data.append({n: ROW_DEFAULTS.get(n, "") for n in chunk_schema(DIM).names} | {
                "chunk_id": f"{name}#{i}", "doc_path": name, "ordinal": i, "access_rank": rank,
                "search_text": " ".join(words), "vector": vector / np.linalg.norm(vector)})
    return pa.Table.from_pylist(data, schema=chunk_schema(DIM))


async def test_the_listed_top_rows_are_those_of_exact_bm25_through_incremental_writes(pgvector_server: str) -> None:
    """The top 16 from the postings against every row that holds a term scored (a search within
    every document scans them all): overlap ≥ 0.95 over 30 queries, after a bulk load and again
    after documents were replaced and deleted; and the kept counts equal counts made afresh."""
    queries = [" ".join(np.random.default_rng(q).choice(VOCABULARY[:120], size=4)) for q in range(30)]
    with index_database(pgvector_server) as url:
        index = open_index(IndexConfig("", "", 0.0, 100, url))
        names = [f"page{n:03d}.md" for n in range(400)]
        for batch in range(4):
            index.write(pages(names[batch * 100:(batch + 1) * 100], seed=batch), names[batch * 100:(batch + 1) * 100])
        every = frozenset(names)

        async def overlap() -> float:
            shares = []
            for q in queries:
                listed = {h.row["chunk_id"] for h in await index.text(q, 1, 16)}
                exact = {h.row["chunk_id"] for h in await index.text(q, 1, 16, within=every)}
                assert len(exact) == 16
                shares.append(len(listed & exact) / 16)
            return float(np.mean(shares))

        assert await overlap() >= 0.95
        for round_ in range(3):  # syncs: pages rewritten, some gone
            changed = names[round_ * 30:round_ * 30 + 20]
            index.write(pages(changed, seed=100 + round_), changed + names[300 + round_ * 5:305 + round_ * 5])
        every = frozenset(index.doc_hashes())
        assert await overlap() >= 0.95
        with sa.create_engine(driver_url(url), poolclass=sa.NullPool).connect() as c:
            per_lexeme = f"SELECT lexeme, sum(docs)::bigint FROM {TERMS} GROUP BY lexeme HAVING sum(docs) > 0"
            kept: dict[str, int] = dict(c.execute(sa.text(per_lexeme)).all())
            every_row = f"ts_stat('SELECT search_tsv FROM {CHUNKS}')"
            fresh: dict[str, int] = dict(c.execute(sa.text(f"SELECT word, ndoc::bigint FROM {every_row}")).all())
            stats = c.execute(sa.text(f"SELECT rows, words FROM {TEXT_STATS}")).one()
            cut = int(c.execute(sa.text(f"SELECT count(*) FROM {TERMS} WHERE floor > 0")).scalar() or 0)
            counted = c.execute(sa.text(f"SELECT count(*), sum(docsbot_index_words(search_tsv)) FROM {CHUNKS}")).one()
        assert kept == fresh and len(kept) > 100 and cut > 0  # some lists were cut: the pool is not every row
        assert tuple(stats) == tuple(counted) and stats[0] == 4 * (400 - 15)


def test_a_reset_empties_the_counts(pgvector_server: str) -> None:
    """TRUNCATE (Index.reset) empties the counts: the next rows are counted alone."""
    with index_database(pgvector_server) as url:
        index = open_index(IndexConfig("", "", 0.0, 100, url))
        index.write(pages(["a.md", "b.md"], seed=1), None)
        index.reset()
        index.write(pages(["c.md"], seed=2, per_page=3), None)
        with sa.create_engine(driver_url(url), poolclass=sa.NullPool).connect() as c:
            assert c.execute(sa.text(f"SELECT rows FROM {TEXT_STATS}")).scalar() == 3
            assert c.execute(sa.text(f"SELECT max(docs) FROM {TERMS}")).scalar() == 3
