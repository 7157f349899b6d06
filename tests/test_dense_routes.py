"""Store.dense on every route (flat scan, ANN with the access filter inside, ANN without it when
every row passes, ANN probing all partitions when the first probes come back short): never a row
above the reader's level, and the exact top k or nearly (SQ distances may swap neighbours)."""
from __future__ import annotations

from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from rag.levels import Level
from rag.store import chunk_schema, vector_array
from rag.store.search import Store

K = 16
NEVER = 2**62  # an ann_min_rows no table reaches: every search scans flat


class SmallPartitions(Store):
    """The real store with 250-row IVF partitions, so a test table of 20k rows has 80 of them:
    enough for a search to probe only some (at the real 4,096 it would take ~200k rows)."""

    ANN_PARTITION_ROWS = 250


def rows_table(vectors: np.ndarray, ranks: np.ndarray, first_id: int = 0) -> pa.Table:
    count, dim = vectors.shape
    schema = chunk_schema(dim)
    columns = {f.name: pa.array([""] * count, type=f.type) for f in schema if f.type == pa.string()}
    columns |= {"chunk_id": pa.array([str(first_id + i) for i in range(count)]),
                "doc_path": pa.array([f"doc{first_id + i}.md" for i in range(count)]),
                "ordinal": pa.array(np.zeros(count, np.int32)), "review_days": pa.array(np.zeros(count, np.int32)),
                "access_rank": pa.array(ranks.astype(np.int8)),
                "vector": vector_array(vectors)}
    return pa.table([columns[f.name] for f in schema], schema=schema)


def unit(vectors: np.ndarray) -> np.ndarray:
    return (vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)).astype(np.float32)


def exact_top(vectors: np.ndarray, ranks: np.ndarray, query: np.ndarray, max_rank: int) -> set[int]:
    scores = np.where(ranks <= max_rank, vectors @ query, -np.inf)
    return set(np.argsort(-scores)[:K].tolist())


def found(hits: list) -> set[int]:
    return {int(h.row["chunk_id"]) for h in hits}


async def test_no_route_returns_a_row_above_the_reader(tmp_path: Path) -> None:
    """Levels by topic, as folders give them: each level's rows gather around its own centres."""
    rng = np.random.default_rng(5)
    rows, dim = 20_000, 16
    centres = unit(rng.standard_normal((30, dim)))
    topic = rng.integers(0, 30, rows)
    vectors = unit(centres[topic] + 0.5 * rng.standard_normal((rows, dim)) / np.sqrt(dim))
    ranks = np.select([topic < 3, topic < 21], [int(Level.public), int(Level.team)], int(Level.restricted))
    store = Store(str(tmp_path / "index"))
    store.write(rows_table(vectors, ranks), None)
    queries = unit(centres[[0, 10, 25]] + 0.3 * rng.standard_normal((3, dim)) / np.sqrt(dim))
    for ann_min_rows in (NEVER, 0):  # every search flat, then every search on the ANN index
        store.maintain(ann_min_rows=ann_min_rows)
        for level in Level:
            for query in queries:
                hits = await store.dense(query, int(level), K)
                assert len(hits) == K and all(h.row["access_rank"] <= int(level) for h in hits)
                assert ranks[list(found(hits))].max() <= int(level)
                overlap = len(found(hits) & exact_top(vectors, ranks, query, int(level)))
                assert overlap == K if ann_min_rows == NEVER else overlap >= K - 2


async def test_dense_scores_are_exact_cosines_in_order_on_every_route(tmp_path: Path) -> None:
    """The IVF_SQ index ranks by quantised distances; the hits' scores (which the answerability
    gate reads) are the exact cosine of the returned vectors, best first, on the ANN route too."""
    rng = np.random.default_rng(7)
    vectors = unit(rng.standard_normal((6_000, 384)))
    query = unit(vectors[42] + 0.5 * rng.standard_normal(384) / np.sqrt(384))
    store = Store(str(tmp_path / "index"))
    store.write(rows_table(vectors, np.zeros(len(vectors))), None)
    for ann_min_rows in (NEVER, 0):
        store.maintain(ann_min_rows=ann_min_rows)
        assert store.has_ann_index() == (ann_min_rows == 0)
        hits = await store.dense(query, int(Level.restricted), K)
        exact = [float(vectors[int(h.row["chunk_id"])] @ query) for h in hits]
        assert [h.score for h in hits] == pytest.approx(exact, abs=1e-5)
        assert exact == sorted(exact, reverse=True) and int(hits[0].row["chunk_id"]) == 42


async def test_a_reader_whom_every_row_passes_still_never_sees_rows_added_above_it(tmp_path: Path) -> None:
    """While every row is at team level, a team reader's search runs without the filter; once
    another writer adds restricted rows (nearer the query than any), the next search filters."""
    rng = np.random.default_rng(6)
    rows, dim = 8_000, 16
    vectors = unit(rng.standard_normal((rows, dim)))
    query = unit(rng.standard_normal(dim))
    writer = Store(str(tmp_path / "index"))
    writer.write(rows_table(vectors, np.full(rows, int(Level.team))), None)
    writer.maintain(ann_min_rows=0)
    reader = Store(str(tmp_path / "index"), refresh_s=0)
    before = await reader.dense(query, int(Level.team), K)
    assert len(before) == K and len(found(before) & exact_top(vectors, np.ones(rows), query, 1)) >= K - 2

    secret = unit(query + 0.01 * rng.standard_normal((K, dim)))
    added = rows_table(secret, np.full(K, int(Level.restricted)), first_id=rows)
    writer.write(added, added["doc_path"].to_pylist())
    after = await reader.dense(query, int(Level.team), K)
    assert len(after) == K and all(h.row["access_rank"] <= int(Level.team) for h in after)
    assert not found(after) & set(range(rows, rows + K))
    assert found(await reader.dense(query, int(Level.restricted), K)) == set(range(rows, rows + K))


async def test_a_filter_whose_rows_lie_away_from_the_query_probes_every_partition(tmp_path: Path) -> None:
    """Public rows (30%) all lie opposite the query: the partitions probed first hold none of
    them, so the search probes them all and still returns the k nearest public rows."""
    rng = np.random.default_rng(3)
    rows, dim = 20_000, 16
    axis = np.zeros(dim, np.float32)
    axis[0] = 1.0
    public = rng.random(rows) < 0.3
    side = np.where(public, -1.0, 1.0)[:, None]
    vectors = unit(side * axis + 0.4 * rng.standard_normal((rows, dim)) / np.sqrt(dim))
    ranks = np.where(public, int(Level.public), int(Level.restricted))
    store = SmallPartitions(str(tmp_path / "index"))
    store.write(rows_table(vectors, ranks), None)
    store.maintain(ann_min_rows=0)
    partitions = store.ann_partitions(rows)
    assert store.ann_nprobes(rows, int(public.sum())) < partitions // 2  # the first probes: restricted rows only
    hits = await store.dense(axis, int(Level.public), K)
    assert len(hits) == K and all(h.row["access_rank"] == int(Level.public) for h in hits)
    assert len(found(hits) & exact_top(vectors, ranks, axis, int(Level.public))) >= K - 2


async def test_a_narrow_filter_on_the_ann_route_still_fills_the_top_k(tmp_path: Path) -> None:
    """40 public rows of 20k, all the least like the query: the search probes every partition."""
    rng = np.random.default_rng(3)
    rows, dim = 20_000, 32
    vectors = unit(rng.standard_normal((rows, dim)))
    axis = np.zeros(dim, np.float32)
    axis[0] = 1.0
    public = np.argsort(vectors @ axis)[:40]
    ranks = np.full(rows, int(Level.restricted))
    ranks[public] = int(Level.public)
    store = Store(str(tmp_path / "index"))
    store.write(rows_table(vectors, ranks), None)
    store.maintain(ann_min_rows=0)  # the ANN route for every filter
    assert store.has_ann_index()
    hits = await store.dense(axis, int(Level.public), K)
    assert len(hits) == K and found(hits) <= set(public.tolist())
    assert len(found(hits) & exact_top(vectors, ranks, axis, int(Level.public))) >= K - 2


async def test_the_ann_index_keeps_its_partition_size_through_maintain(tmp_path: Path) -> None:
    """LanceDB's optimize() joins IVF partitions smaller than its own target unless the index
    was built with a target size: one probe must still reach about one partition's rows."""
    rng = np.random.default_rng(4)
    rows, dim = 20_000, 16
    vectors = unit(rng.standard_normal((rows, dim)))
    store = SmallPartitions(str(tmp_path / "index"))
    store.write(rows_table(vectors, np.zeros(rows)), None)
    store.maintain(ann_min_rows=0)
    added = rows_table(vectors[:100], np.zeros(100), first_id=rows)
    store.write(added, added["doc_path"].to_pylist())
    store.maintain(ann_min_rows=0)  # folds new rows into the index: LanceDB's partition maintenance
    table = await (await lancedb.connect_async(store.uri)).open_table("chunks")
    one_probe = await table.query().nearest_to(vectors[0]).distance_type("cosine").nprobes(1).limit(rows).to_arrow()
    assert 0 < one_probe.num_rows <= 4 * SmallPartitions.ANN_PARTITION_ROWS


def test_probes_grow_as_the_filter_narrows_and_never_pass_the_partitions(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "index"))
    rows = 1_000_000
    partitions = store.ann_partitions(rows)
    everyone, team, public = (store.ann_nprobes(rows, int(rows * share)) for share in (1.0, 0.74, 0.1))
    assert 0 < everyone < team < public < partitions
    assert store.ann_nprobes(rows, 1) == partitions and store.ann_nprobes(100, 100) == 1


async def test_an_index_from_before_the_recorded_partition_size_is_probed_as_built_then_rebuilt(tmp_path: Path) -> None:
    """Upgrading: an index whose meta does not say its partition size (built with 1,000-row
    partitions) is probed as if it had those, so no search probes too few, until maintain()."""
    rng = np.random.default_rng(9)
    vectors = unit(rng.standard_normal((5_000, 16)))
    store = Store(str(tmp_path / "index"))
    store.write(rows_table(vectors, np.zeros(5_000, np.int8)), None)
    store.maintain(ann_min_rows=0)
    assert store.meta()["ann_partition_rows"] == Store.ANN_PARTITION_ROWS
    store.set_meta(ann_partition_rows=0)  # as an older version left it
    hits = await store.dense(vectors[0], int(Level.restricted), K)
    assert store._ann.partition_rows == Store.LEGACY_PARTITION_ROWS and found(hits) >= {0}
    assert store.ann_nprobes(5_000, 5_000, Store.LEGACY_PARTITION_ROWS) == 5  # every legacy partition
    store.maintain(ann_min_rows=0)
    assert store.meta()["ann_partition_rows"] == Store.ANN_PARTITION_ROWS
