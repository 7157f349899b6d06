"""Smoke test of `python -m eval bench` on tiny tables made from the sample docs: structure and sane
values, no timings."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from eval import bench
from eval.bench_audience import Load, report, run_mode
from tests.support.settings import REPO, SAMPLE_DOCS


def test_exact_top_applies_the_access_mask() -> None:
    rng = np.random.default_rng(1)
    vectors = rng.standard_normal((300, 8)).astype(np.float32)
    ranks = rng.integers(0, 3, 300).astype(np.int8)
    query = vectors[0]
    top = bench.exact_top(vectors, ranks, query, 0)
    allowed = np.flatnonzero(ranks == 0)
    expected = allowed[np.argsort(-(vectors[allowed] @ query))][: bench.K]
    assert top.tolist() == expected.tolist()


def test_crossover_is_where_ann_stays_faster() -> None:
    points = [
        {"rows_passing": 1_000, "flat_p50_ms": 2.0, "ann_p50_ms": 3.0},
        {"rows_passing": 7_000, "flat_p50_ms": 9.0, "ann_p50_ms": 8.0},
        {"rows_passing": 70_000, "flat_p50_ms": 60.0, "ann_p50_ms": 9.0},
    ]
    assert bench.crossover(points) == 7_000
    assert bench.crossover(points[:1]) is None


def test_bench_runs_end_to_end(tmp_path: Path) -> None:
    result = bench.run(tmp_path, sizes=[2_000], probe_sizes=[1_000], queries=6, ingest_chunks=25,
                       docs_dir=SAMPLE_DOCS, golden=REPO / "eval" / "golden.jsonl")
    figures = result["retrieval"]["2000"]
    for name, _, _ in bench.FILTERS:
        row = figures[name]
        assert 0.0 <= row["recall@16"] <= 1.0
        assert row["p50_ms"] > 0 and row["baseline_p50_ms"] > 0 and row["ratio"] > 0
        assert row["route"] in ("flat", "ann")
        if row["route"] == "flat":  # an exact scan: anything below 1.0 is a wrong (e.g. stale) read
            assert row["recall@16"] == 1.0
        assert 0 < row["rows_passing"] <= 2_000
    assert len(result["ann_min_rows"]["points"]) == 2 * len(bench.FILTERS)
    ingest = result["ingest"]
    assert ingest["chunks_per_s"] > 0 and ingest["chunks_per_s_1thread"] > 0 and ingest["embed_per_s"]["processes"] > 0
    assert min(ingest["min_cosine_vs_1thread"].values()) >= 0.9999  # same vectors, whatever the parallelism
    assert {"embed", "write", "maintain", "infer_thread_s"} <= set(ingest["seconds"]["threads"])
    assert ingest["query_embed"]["idle_50_ms"] > 0
    assert figures["index_build_s"] > 0 and figures["disk_mb"] > 0
    assert "chunks/s" in bench.report(result)


async def test_bench_audience_counts_one_confirmation_per_answer_past_the_fresh_window(tmp_path: Path) -> None:
    """A question every 60 s per channel: each answer now confirms its channel again (fresh 30 s),
    where before the 300 s cache confirmed it at 0 s and 300 s only."""
    load = Load(channels=2, members=5, every_s=60, minutes=10)
    url = f"sqlite:///{tmp_path / 'state.db'}"
    before, now = await run_mode(load, url, now=False), await run_mode(load, url, now=True)
    assert (before.answers, now.answers) == (20, 20)
    assert (before.slack_calls["conversations.info"], now.slack_calls["conversations.info"]) == (4, 20)
    assert before.slack_calls["users.info"] == now.slack_calls["users.info"]  # levels stay cached
    # Each mode's calls include one auth.test (the installing organisation, bot/directory.py).
    assert "extra Slack calls per answer: +1.600 (ratio now/before 2.39x)" in report(load, before, now, "sqlite")


def test_bench_measures_postgres_beside_lancedb_in_the_same_run(tmp_path: Path, pgvector_server: str) -> None:
    """`eval bench --index-url`: the same rows on both stores at each size, dense per filter with
    recall against numpy, the text list taking turns, writes (the second size's 1,000 rows are too
    few to drop the HNSW graph: kept up to date), build, a one-file sync, disk, and the table naming
    both."""
    from tests.support.pgvector import index_database

    with index_database(pgvector_server) as url:
        result = bench.run(tmp_path, sizes=[1_000, 2_000], probe_sizes=[], queries=6, ingest_chunks=25,
                           docs_dir=SAMPLE_DOCS, golden=REPO / "eval" / "golden.jsonl", index_url=url)
    postgres = result["other_stores"]["postgresql"]
    assert [postgres[size]["hnsw_kept"] for size in ("1000", "2000")] == [False, True]
    for name, _, _ in bench.FILTERS:
        row = postgres["2000"][name]
        assert row["recall@16"] >= 0.9 and row["p95_ms"] >= row["p50_ms"] > 0, (name, row)
        assert row["rows_passing"] == result["retrieval"]["2000"][name]["rows_passing"]
    assert postgres["2000"]["scope"]["rows_passing"] < postgres["2000"]["public"]["rows_passing"]
    text = result["retrieval"]["2000"]["text"]
    assert text["postgresql"]["p50_ms"] > 0 and text["postgresql"]["overlap_with_lancedb"] >= 0.5
    assert postgres["2000"]["disk_mb"] > 0 and postgres["2000"]["write_rows_per_s"] > 0
    for sync in (postgres["2000"]["one_file_sync"], result["retrieval"]["2000"]["one_file_sync"]):
        assert sync["write_s"] > 0 and sync["maintain_s"] > 0
    assert result["retrieval"]["2000"]["max_rss_mb"] > 0
    table = bench.report(result)
    assert "LanceDB vs postgresql" in table and "text list" in table and "load average" in table
    assert "one-file sync (postgresql)" in table and "CPU AVX-512: yes" in table
