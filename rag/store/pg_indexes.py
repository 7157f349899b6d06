"""The Postgres index's search indexes: its HNSW graphs (pgvector), which there are and how
`maintain` builds them, the text search's indexes, and when a write is big enough to be loaded
without them.

A graph kept up to date by the writes costs each new row a walk through it (m 24, ef_construction
128, 384 dimensions: 58 rows/s into a 100k-row table on a 2-core machine), while building the whole
graph afresh costs ~1.3 ms a row (128 s at 100k; docs/performance.md); the text search's GIN and
postings B-trees cost a bulk load more than half of what is left, and build in a tenth of that.
A write that adds at least BULK_SHARE of the rows the table holds, and at least BULK_MIN_ROWS (a
first sync, a rebuild, a large change), is therefore loaded without them: they are dropped (DROP
INDEX CONCURRENTLY, in its own transaction, once the rows are staged and before they are merged)
and the next `maintain` (which every sync and rebuild runs after its write) builds them again.
Readers meanwhile see the old rows until the write commits, as always, searched without those
indexes (an exact scan of the vectors, a sequential read of the postings: correct, slower) until
they are back; a writer that fails or dies in between leaves them to the next `maintain`. A
smaller write (a one-file sync) keeps them and updates them as it inserts.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection

CHUNKS, POSTINGS = "docsbot_index_chunks", "docsbot_index_postings"
# A denser graph than pgvector's default (m=16, ef_construction=64): with the awsdocs questions at
# 100k rows recall@16 went from 0.90-0.94 to 0.96-0.99 at hnsw.ef_search 200, p50 unchanged
# (7.7-16 ms), index build 34 s (`eval bench --index-url`, docs/performance.md).
M, EF_CONSTRUCTION = 24, 128
HNSW_GRAPH = f"m = {M}, ef_construction = {EF_CONSTRUCTION}"
# A filter that passes few rows walks far through the whole graph before it has its top rows (at
# 100k rows, readers passing 10%: p95 99 ms against 21 ms through a graph of their rows alone,
# recall@16 0.98-0.99 both; docs/performance.md). Readers of a level passing at most this share
# of the rows get a partial graph; one passing more reads the whole graph (a partial one for 70%
# cost 82 s to build at 100k and a write into each graph for most rows, for 27 -> 20 ms p50).
PARTIAL_MAX_SHARE = 0.25
# Graph upkeep per row is ~13x a fresh build's share per row (above): adding a tenth of the table
# costs about what building it again does. Below BULK_MIN_ROWS a write keeps the graphs whatever
# the table's size, so that a sync of a few documents never drops them.
BULK_SHARE = 0.1
BULK_MIN_ROWS = 2_000
# maintenance_work_mem for a build: pgvector builds fast while the whole graph fits in it (each
# row's vector and its layer-0 neighbour list, 2·m entries of 16 bytes, plus the element's own
# bookkeeping; a quarter more for the layers above and the allocator), and falls back to writing
# the graph to disk page by page, many times slower, once it does not. Never less than the
# server's own setting nor BUILD_MEMORY_MIN; at most BUILD_MEMORY_MAX (a 1M-row, 384-dimension
# graph needs ~3 GB).
BUILD_MEMORY_MIN, BUILD_MEMORY_MAX = 256 * 2**20, 4 * 2**30


# The text search's indexes, as migrations 0008 and 0014 made them. Kept up to date, they took
# most of a bulk load's time (10k rows: the GIN 3.8 s of the insert's 7 s, built afresh 0.45 s;
# the postings' B-trees 5.6 s of the trigger's 8.2 s).
TEXT_INDEXES = {
    f"ix_{CHUNKS}_search_tsv": f"ON {CHUNKS} USING gin (search_tsv)",
    f"ix_{POSTINGS}_list": f"ON {POSTINGS} (lexeme, access_rank, impact DESC) INCLUDE (chunk_id)",
    f"ix_{POSTINGS}_chunk": f"ON {POSTINGS} (chunk_id)",
}


def graph_name(dim: int, max_rank: int | None) -> str:
    name = f"ix_{CHUNKS}_hnsw_{dim}"
    return name if max_rank is None else f"{name}_upto_{int(max_rank)}"


def hnsw_index(dim: int, max_rank: int | None) -> str:
    """The statement making the HNSW graph of every row (max_rank None) or of the rows a reader
    at `max_rank` may see; a search names the rank as a literal so that the planner can use it."""
    where = "" if max_rank is None else f" WHERE access_rank <= {int(max_rank)}"
    return (f"CREATE INDEX IF NOT EXISTS {graph_name(dim, max_rank)} ON {CHUNKS} USING hnsw "
            f"((vector::vector({dim})) vector_cosine_ops) WITH ({HNSW_GRAPH}){where}")


def text_index(name: str) -> str:
    return f"CREATE INDEX IF NOT EXISTS {name} {TEXT_INDEXES[name]}"


def search_indexes(c: Connection) -> list[str]:
    """The names of the indexes a big write drops: the HNSW graphs and the text indexes there are."""
    return list(c.execute(sa.text(
        "SELECT indexname FROM pg_indexes WHERE (tablename = :t AND indexdef LIKE '% USING hnsw %') "
        "OR indexname = ANY(:text) ORDER BY indexname"), {"t": CHUNKS, "text": list(TEXT_INDEXES)}).scalars())


def selective_ranks(c: Connection) -> list[int]:
    """The access ranks below the highest whose readers pass at most PARTIAL_MAX_SHARE of the
    rows, by the planner's statistics (ANALYZE's sample: no count of every row)."""
    row = c.execute(sa.text("SELECT most_common_vals::text::int[], most_common_freqs FROM pg_stats "
                            "WHERE tablename = :t AND attname = 'access_rank'"), {"t": CHUNKS}).first()
    if row is None or row[0] is None:
        return []
    shares = sorted(zip(row[0], row[1]))
    passing, ranks = 0.0, []
    for rank, share in shares[:-1]:  # readers at the highest rank present pass every row
        passing += share
        if passing <= PARTIAL_MAX_SHARE:
            ranks.append(int(rank))
    return ranks


def stale_statistics(c: Connection) -> bool:
    """Whether the chunks table was never analyzed or BULK_SHARE of its rows changed since (by
    the server's activity counters, which a writer reports within a second or so of committing:
    at worst one small write late; autovacuum analyzes too)."""
    row = c.execute(sa.text("SELECT n_mod_since_analyze, n_live_tup, coalesce(last_analyze, last_autoanalyze) "
                            "FROM pg_stat_user_tables WHERE relname = :t"), {"t": CHUNKS}).first()
    return row is None or row[2] is None or row[0] > BULK_SHARE * max(row[1], 1)


def bulk(added: int, present: int) -> bool:
    """Whether a write of `added` rows into a table of `present` rows loads without the search
    indexes."""
    return added >= BULK_MIN_ROWS and added >= BULK_SHARE * present


def build_memory(c: Connection, rows: int, dim: int) -> str:
    """maintenance_work_mem for building graphs of up to `rows` rows of `dim` dimensions (and the
    text indexes, which need less), in kB."""
    per_row = (4 * dim + 2 * M * 16 + 256) * 5 // 4
    current = int(c.execute(sa.text("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'"))
                  .scalar_one()) * 1024
    wanted = max(current, BUILD_MEMORY_MIN, min(BUILD_MEMORY_MAX, rows * per_row))
    return f"{wanted // 1024}kB"
