"""The LanceDB index: one row per chunk with its vector, a BM25 index beside it, and metadata.

Tables: `chunks` (searched), `vectors` (embedding cache keyed by text hash, so no text is ever
embedded twice) and `meta` (model, dimension, chunking, indexed commit, last sync outcome).
Every write of chunks is one `merge_insert`, so a reader sees a document's old chunks or its new
ones, never neither, and a writer killed half-way leaves the previous version in place.
"""
from __future__ import annotations

import functools
import inspect
import json
import logging
import math
import os
import re
from dataclasses import dataclass, field
from datetime import timedelta
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa

# The Rust logger prints scan and index-build notices at WARN; lancedb reads LANCEDB_LOG (and
# pylance LANCE_LOG) once, at import. Deprecations are fixed in the queries (see dense, text).
for _variable in ("LANCEDB_LOG", "LANCE_LOG"):
    os.environ.setdefault(_variable, "error")

import lancedb  # noqa: E402
from lancedb.index import FTS, Bitmap, BTree, IvfSq  # noqa: E402

from docsbot.observability.tracing import traced  # noqa: E402

if TYPE_CHECKING:
    from rag.mirror import MirroredIndex

log = logging.getLogger(__name__)

CHUNKS, VECTORS, META = "chunks", "vectors", "meta"
ROW_FIELDS = [
    ("chunk_id", pa.string()),
    ("doc_path", pa.string()),
    ("ordinal", pa.int32()),
    ("title", pa.string()),
    ("section", pa.string()),
    ("anchor", pa.string()),
    ("version", pa.string()),
    ("commit", pa.string()),
    ("commit_date", pa.string()),
    ("url", pa.string()),
    ("access", pa.string()),
    ("access_rank", pa.int8()),
    ("area", pa.string()),
    ("text", pa.string()),
    ("search_text", pa.string()),
    ("text_hash", pa.string()),
    ("doc_hash", pa.string()),
]
# Searches return only what ranking needs; the final few chunks are then read whole (rows()).
SEARCH_COLUMNS = ["chunk_id", "doc_path", "access_rank", "vector"]
ROW_COLUMNS = [name for name, _ in ROW_FIELDS if name != "search_text"]
# Reads of old versions must outlive a reader's refresh interval (see shared notes on cleanup).
CLEANUP_AFTER = timedelta(minutes=10)


class StoreError(RuntimeError):
    """Base for index problems that a person must act on (message says what to do)."""


class IndexMissing(StoreError):
    pass


class IndexMismatch(StoreError):
    pass


class IndexUnreadable(StoreError):
    """Lance or the file system failed on the index (a data file deleted, a disk error...)."""


class WriteRefused(StoreError):
    """This process may no longer write the index (it lost the index-writer lease)."""


_RUST_LOCATION = re.compile(r",?\s*/\S+\.rs:\d+:\d+")


@contextmanager
def _unreadable(uri: str) -> Iterator[None]:
    try:
        yield
    except StoreError:
        raise
    except (OSError, RuntimeError) as exc:  # lance reports a missing data file as a RuntimeError
        text = str(exc).strip()
        reason = _RUST_LOCATION.sub("", text.splitlines()[0]) if text else type(exc).__name__
        raise IndexUnreadable(f"the index at {uri} cannot be read ({reason}): "
                              "run `docsbot index --rebuild` to rebuild it from the docs") from exc


def _store_errors(cls: type) -> type:
    """Every public method of the class turns a Lance or I/O error into IndexUnreadable: one line
    that names the index and the fix, instead of a traceback in whichever command touched it."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(method):
            @functools.wraps(method)
            async def guarded_async(self: "Store", *args: Any, **kwargs: Any) -> Any:
                with _unreadable(self.uri):
                    return await method(self, *args, **kwargs)
            return guarded_async

        @functools.wraps(method)
        def guarded(self: "Store", *args: Any, **kwargs: Any) -> Any:
            with _unreadable(self.uri):
                return method(self, *args, **kwargs)
        return guarded

    for name, member in list(vars(cls).items()):
        if not name.startswith("_") and inspect.isfunction(member):
            setattr(cls, name, wrap(member))
    return cls


def chunk_schema(dim: int) -> pa.Schema:
    return pa.schema([*ROW_FIELDS, ("vector", pa.list_(pa.float32(), dim))])


def meta_table(values: dict[str, Any]) -> pa.Table:
    return pa.table({"key": list(values), "value": [json.dumps(v) for v in values.values()]})


def _index_chunks(table: Any) -> None:
    table.create_index("search_text", config=FTS())
    table.create_index("access_rank", config=Bitmap())
    table.create_index("chunk_id", config=BTree())


def vector_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])


def sql_list(values: Iterable[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


_FTS_TOKEN = re.compile(r"[\w][\w.-]*")


def fts_query(text: str) -> str:
    """Words only: the FTS parser must never see user punctuation as query syntax."""
    return " ".join(_FTS_TOKEN.findall(text))


@dataclass
class Hit:
    row: dict[str, Any]
    vector: np.ndarray
    score: float  # cosine similarity for dense hits, BM25 score for text hits


@dataclass
class _AnnState:
    """The vector-index routing facts of one table version (see Store.dense)."""

    version: int  # the table version they were read at
    has_index: bool
    min_rows: int  # ann_min_rows recorded by the last maintain()
    rows: int  # all rows of that version
    partition_rows: int  # rows per IVF partition the index was built with
    counts: dict[int, int] = field(default_factory=dict)  # max_rank -> rows at or below it

    async def passing(self, table: Any, max_rank: int) -> int:
        """Rows a reader at `max_rank` may see, counted once per version with the bitmap index."""
        if max_rank not in self.counts:
            self.counts[max_rank] = await table.count_rows(_access_filter(max_rank))
        return self.counts[max_rank]


def _access_filter(max_rank: int) -> str:
    return f"access_rank <= {int(max_rank)}"


@dataclass
class _View:
    """The open tables reads go through. A pinned view (a replica's local mirror, rag/mirror.py)
    reads exactly the given table versions; pinning new ones replaces the whole view, so a read
    that already holds a table finishes on the version it started with."""

    pins: dict[str, int] | None = None  # table -> version; None: the latest (refreshed)
    tables: dict[str, Any] = field(default_factory=dict)
    reader: Any | None = None  # the chunks table on LanceDB's async API (searches)


@_store_errors
class Store:
    def __init__(self, uri: str, refresh_s: float | None = 2.0, label: str | None = None) -> None:
        self.uri = uri
        self.label = label or uri  # what messages call the index (a mirror's bucket, not its folder)
        self._interval = timedelta(seconds=refresh_s) if refresh_s is not None else None
        self._db = lancedb.connect(uri, read_consistency_interval=self._interval)
        self._view = _View()
        self._ann: _AnnState | None = None
        self.mirror: MirroredIndex | None = None  # what keeps a pinned store current (a replica's copy)
        # Asked right before each commit that changes what readers see: None, or why this process
        # must not write (sync/lock.py: the index-writer lease was lost). The vector cache is
        # not asked: it maps a text's hash to its vector, so a late write there is harmless.
        self.may_write: Callable[[], str | None] | None = None

    # -- tables -----------------------------------------------------------------------------
    def pin(self, versions: dict[str, int]) -> None:
        """Read these table versions from now on (a table not named is missing); reads already
        under way finish on the versions they started with."""
        self._view = _View(dict(versions))
        self._ann = None

    def _table(self, name: str) -> Any | None:
        view = self._view
        if name not in view.tables:
            if view.pins is not None:
                if name not in view.pins:
                    return None
                table = self._db.open_table(name)
                table.checkout(view.pins[name])
            else:
                if name not in self._db.list_tables().tables:
                    return None
                try:
                    table = self._db.open_table(name)
                except ValueError:  # listed while another writer is still creating it: not there yet
                    return None
            view.tables[name] = table
        return view.tables[name]

    def chunks(self) -> Any:
        table = self._table(CHUNKS)
        if table is None:
            raise IndexMissing(f"no index at {self.label}: run `docsbot index` (or `docsbot sync`) first")
        return table

    async def _searchable(self) -> Any:
        """The chunks table for searches. Searches use LanceDB's async API: the sync one hops to
        a background event loop on every call, which cost ~20% of a search at 100k rows."""
        view = self._view
        if view.reader is None:
            self.chunks()  # IndexMissing, with its message, when there is no index yet
            db = await lancedb.connect_async(self.uri, read_consistency_interval=self._interval)
            reader = await db.open_table(CHUNKS)
            if view.pins is not None:
                await reader.checkout(view.pins[CHUNKS])
            view.reader = reader
        return view.reader

    def exists(self) -> bool:
        return self._table(CHUNKS) is not None

    # -- metadata -----------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        table = self._table(META)
        if table is None:
            return {}
        rows = table.to_arrow().to_pylist()
        return {row["key"]: json.loads(row["value"]) for row in rows}

    def _before_commit(self) -> None:
        reason = self.may_write() if self.may_write is not None else None
        if reason:
            raise WriteRefused(f"{reason}: stopped before writing to the index at {self.label}")

    def set_meta(self, **values: Any) -> None:
        self._before_commit()
        data = meta_table(values)
        table = self._table(META)
        if table is None:
            self._view.tables[META] = self._db.create_table(META, data)
        else:
            table.merge_insert("key").when_matched_update_all().when_not_matched_insert_all().execute(data)

    def check_embedding(self, model: str, dim: int) -> dict[str, Any]:
        """The index's metadata; IndexMismatch when it was built with another embedding model."""
        meta = self.meta()
        built = meta.get("embedding")
        if built and (built["model"], built["dim"]) != (model, dim):
            raise IndexMismatch(
                f"the index was built with {built['model']} (dimension {built['dim']}) but "
                f"{model} (dimension {dim}) is configured: run `docsbot index` to rebuild it"
            )
        return meta

    # -- vector cache -------------------------------------------------------------------------
    def cached_vectors(self, text_hashes: list[str]) -> dict[str, np.ndarray]:
        table = self._table(VECTORS)
        found: dict[str, np.ndarray] = {}
        if table is None or not text_hashes:
            return found
        unique = sorted(set(text_hashes))
        for start in range(0, len(unique), 500):
            batch = unique[start:start + 500]
            rows = table.search().where(f"text_hash IN ({sql_list(batch)})").select(["text_hash", "vector"])
            result = rows.limit(len(batch)).to_arrow()
            if result.num_rows == 0:  # none of this batch cached (reshape(0, -1) would fail)
                continue
            vectors = result["vector"].combine_chunks().flatten().to_numpy().reshape(len(result), -1)
            found.update(zip(result["text_hash"].to_pylist(), vectors))
        return found

    def cached_table(self) -> pa.Table | None:
        """The whole vector cache (text_hash, vector), or None when there is none yet."""
        table = self._table(VECTORS)
        return None if table is None else table.to_arrow()

    def cache_vectors(self, text_hashes: list[str], vectors: np.ndarray) -> None:
        if not text_hashes:
            return
        data = pa.table({"text_hash": text_hashes, "vector": vector_array(vectors)})
        table = self._table(VECTORS)
        if table is None:
            self._view.tables[VECTORS] = self._db.create_table(VECTORS, data)
        else:
            table.merge_insert("text_hash").when_not_matched_insert_all().execute(data)

    def reset(self) -> None:
        """Drop everything (a rebuild with another embedding model)."""
        self._before_commit()
        for name in (CHUNKS, VECTORS, META):
            if self._table(name) is not None:
                self._db.drop_table(name)
        self._view = _View()
        self._wrote()

    # -- writes -------------------------------------------------------------------------------
    def write(self, rows: pa.Table, replace_paths: Iterable[str] | None) -> None:
        """Upsert rows and delete the other chunks of the touched paths, in one commit.

        replace_paths=None means a full rebuild: every chunk not in `rows` is deleted.
        """
        self._before_commit()
        table = self._table(CHUNKS)
        if table is None:
            self._view.tables[CHUNKS] = table = self._db.create_table(CHUNKS, schema=rows.schema)
            _index_chunks(table)
        paths = None if replace_paths is None else sorted(set(replace_paths))
        if rows.num_rows == 0:
            if paths is None:
                table.delete("true")
            elif paths:
                table.delete(f"doc_path IN ({sql_list(paths)})")
        else:
            merge = table.merge_insert("chunk_id").when_matched_update_all().when_not_matched_insert_all()
            if paths is None:
                merge = merge.when_not_matched_by_source_delete()
            elif paths:
                merge = merge.when_not_matched_by_source_delete(f"doc_path IN ({sql_list(paths)})")
            merge.execute(rows)
        self._wrote()

    def replace(self, name: str, data: pa.Table) -> None:
        """Swap a table's whole content for `data` in one commit: a new version of the same table,
        so readers keep the old rows until it lands and none of the old files is read (it works
        on an index whose data files are damaged, and on object stores)."""
        self._before_commit()
        table = self._view.tables[name] = self._db.create_table(name, data, mode="overwrite")
        if name == CHUNKS:
            _index_chunks(table)  # until these exist, searches scan (slower, same results)
        self._wrote()

    def _wrote(self) -> None:
        """This process's searches reopen the table, so they see its own writes at once (other
        processes see them within the read consistency interval)."""
        self._view.reader = None
        self._ann = None

    # IVF_SQ settings measured with `python -m eval bench` (README, "A million chunks").
    # Rows per IVF partition, given to LanceDB as target_partition_size: it keeps that through
    # optimize(). A num_partitions is not kept: optimize() joins partitions smaller than its own
    # target, and 1,000 partitions of 1,000 rows became 57 of ~17,500 at 1M rows.
    ANN_PARTITION_ROWS = 4096
    # Indexes built before the partition size was recorded in meta had one partition per 1,000
    # rows (fewer once optimize() joined them): probes are sized for that until the next
    # maintain() rebuilds them, so an upgrade never probes too few partitions.
    LEGACY_PARTITION_ROWS = 1000
    ANN_PROBE_SCALE = 1.5  # see ann_nprobes()
    ANN_MIN_PROBES = 12
    ANN_RETRAIN = 1.5  # rebuild the index when the row count moves by this factor

    def maintain(self, ann_min_rows: int, cleanup_after: timedelta = CLEANUP_AFTER) -> None:
        """Compact, fold new rows into the FTS, bitmap and ANN indexes, and build the ANN index
        once the table is large enough for it to beat a flat scan.

        `ann_min_rows` is recorded in meta: a reader routes a search whose access filter passes
        fewer rows than that to a flat scan, which is then faster and exact."""
        self._before_commit()
        table = self.chunks()
        if self.meta().get("ann_min_rows") != ann_min_rows:
            self.set_meta(ann_min_rows=ann_min_rows)
        table.optimize(cleanup_older_than=cleanup_after)
        self._wrote()
        rows, trained = table.count_rows(), self.meta().get("ann_trained_rows", 0)
        # optimize() adds new rows to the IVF partitions but never retrains them: rebuild when the
        # table has grown or shrunk by half since training, so partitions keep their size.
        stale = (not self.has_ann_index() or not trained / self.ANN_RETRAIN <= rows <= trained * self.ANN_RETRAIN
                 or self.meta().get("ann_partition_rows") != self.ANN_PARTITION_ROWS)
        if rows >= ann_min_rows and stale:
            self.build_ann_index()
        vectors = self._table(VECTORS)
        if vectors is not None:
            vectors.optimize(cleanup_older_than=cleanup_after)

    async def _ann_state(self, table: Any) -> _AnnState:
        """What dense() needs to pick a route, read again only when the table version changes.

        A new version's vector index is loaded into LanceDB's cache first (~1 ms when it already
        is): partitions loaded one search at a time made the first ten searches after a rebuild
        take 121 ms on average at 1M rows, against 0.6 s to load all of them at once."""
        version = await table.version()
        if self._ann is None or self._ann.version != version:
            index = next((ix.name for ix in await table.list_indices() if ix.columns == ["vector"]), None)
            if index is not None:
                await table.prewarm_index(index)
            meta = self.meta()
            min_rows = int(meta.get("ann_min_rows", 0))
            partition_rows = int(meta.get("ann_partition_rows") or self.LEGACY_PARTITION_ROWS)
            self._ann = _AnnState(version, index is not None, min_rows, await table.count_rows(), partition_rows)
        return self._ann

    def ann_partitions(self, rows: int, partition_rows: int | None = None) -> int:
        return max(1, rows // (partition_rows or self.ANN_PARTITION_ROWS))

    def ann_nprobes(self, rows: int, passing: int, partition_rows: int | None = None) -> int:
        """IVF partitions to probe when `passing` of the table's `rows` rows pass the access
        filter: ANN_PROBE_SCALE·sqrt(partitions / share passing), at least ANN_MIN_PROBES, at
        most all of them.

        More partitions need more probes for the same recall (about as their square root), and a
        filter needs more again: its rows cluster by topic (access levels follow folders), so the
        nearest rows a reader may see lie further out than the nearest rows overall. Below ~50
        partitions the square root falls short (recall@16 0.93-0.94 at 100k rows with 8-9 of 24).
        Measured with `python -m eval bench` (README, "A million chunks")."""
        partitions = self.ann_partitions(rows, partition_rows)
        share = max(passing, 1) / max(rows, 1)
        probes = math.ceil(self.ANN_PROBE_SCALE * math.sqrt(partitions / share))
        return min(partitions, max(self.ANN_MIN_PROBES, probes))

    def has_ann_index(self) -> bool:
        return any(ix.columns == ["vector"] for ix in self.chunks().list_indices())

    def build_ann_index(self) -> None:
        table = self.chunks()
        rows = table.count_rows()
        config = IvfSq(distance_type="cosine", target_partition_size=self.ANN_PARTITION_ROWS)
        table.create_index("vector", config=config, replace=True)
        self.set_meta(ann_trained_rows=rows, ann_partition_rows=self.ANN_PARTITION_ROWS)
        self._wrote()

    # -- reads --------------------------------------------------------------------------------
    @traced("search.dense")
    async def dense(self, vector: np.ndarray, max_rank: int, limit: int) -> list[Hit]:
        """Top `limit` chunks by cosine similarity among those at `max_rank` or below.

        The route comes from counts made once per table version (bitmap index): a filter passing
        fewer than `ann_min_rows` rows scans them flat, exactly; otherwise the ANN index probes
        ann_nprobes() of its partitions, then all of them if that found fewer than `limit` rows.
        The access filter runs inside the search unless every row of the version passes it (it
        costs ~20% at 1M rows even then). Rows above `max_rank` are dropped from every result
        all the same: a version written between the count and the search can cost hits, never
        leak one."""
        table = await self._searchable()
        state = await self._ann_state(table)
        passing = await state.passing(table, max_rank)
        search = functools.partial(self._nearest, table, vector, limit, None if passing == state.rows else max_rank)
        if not (state.has_index and passing >= state.min_rows):
            return _readable(await search(None), max_rank)
        size = state.partition_rows
        nprobes, partitions = self.ann_nprobes(state.rows, passing, size), self.ann_partitions(state.rows, size)
        hits = _readable(await search(nprobes), max_rank)
        if len(hits) < min(limit, passing) and nprobes < partitions:
            hits = _readable(await search(partitions), max_rank)
        return hits

    @staticmethod
    async def _nearest(
        table: Any, vector: np.ndarray, limit: int, max_rank: int | None, nprobes: int | None
    ) -> list[Hit]:
        """One vector search: filtered to `max_rank` unless None, through the ANN index probing
        `nprobes` partitions, or a flat scan when that is None."""
        query = (
            table.query()
            .nearest_to(np.asarray(vector, dtype=np.float32))
            .distance_type("cosine")
            .select([*SEARCH_COLUMNS, "_distance"])  # named, or lance warns that it will drop it
            .limit(limit)
        )
        if max_rank is not None:
            query = query.where(_access_filter(max_rank))
        # minimum/maximum_nprobes would not save work: LanceDB 0.40 always probed the maximum.
        # No refine step: SQ distances alone kept recall@16 at 0.97 and were faster (eval bench);
        # the rows found are then scored and ordered by their exact cosine (_hits).
        query = query.bypass_vector_index() if nprobes is None else query.nprobes(nprobes)
        return _hits(await query.to_arrow(), "_distance", exact_for=vector)

    @traced("search.text")
    async def text(self, query: str, max_rank: int, limit: int) -> list[Hit]:
        words = fts_query(query)
        if not words:
            return []
        table = await self._searchable()
        search = (
            table.query()
            .nearest_to_text(words, columns="search_text")
            .where(_access_filter(max_rank))
            .select([*SEARCH_COLUMNS, "search_text", "_score"])  # search_text: the list's term coverage (rag/retrieval.py)
            .limit(limit)
        )
        return _hits(await search.to_arrow(), "_score")

    async def rows(self, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Whole rows (without vectors) of the given chunks, by id."""
        if not chunk_ids:
            return {}
        table = await self._searchable()
        query = table.query().where(f"chunk_id IN ({sql_list(chunk_ids)})").select(ROW_COLUMNS)
        return {row["chunk_id"]: row for row in (await query.limit(len(chunk_ids)).to_arrow()).to_pylist()}

    async def doc_rows(self, doc_path: str, max_rank: int) -> list[dict[str, Any]]:
        """Whole rows (with their vectors) of one document's chunks at `max_rank` or below, in order."""
        table = await self._searchable()
        where = f"doc_path = {sql_list([doc_path])} AND access_rank <= {int(max_rank)}"
        rows = (await table.query().where(where).select([*ROW_COLUMNS, "vector"]).to_arrow()).to_pylist()
        return sorted(rows, key=lambda row: row["ordinal"])

    def doc_hashes(self) -> dict[str, str]:
        """doc_path -> content hash of what is indexed (for reconcile and status)."""
        if not self.exists():
            return {}
        table = self.chunks().search().select(["doc_path", "doc_hash"]).limit(None).to_arrow()
        return dict(zip(table["doc_path"].to_pylist(), table["doc_hash"].to_pylist()))

    def doc_columns(self, *columns: str) -> dict[str, tuple]:
        """doc_path -> values of per-document columns (doc_hash, commit, ...) for each indexed
        document: what a sync compares with the files at head."""
        if not self.exists():
            return {}
        table = self.chunks().search().select(["doc_path", *columns]).limit(None).to_arrow()
        values = zip(*(table[c].to_pylist() for c in columns))
        return dict(zip(table["doc_path"].to_pylist(), values))

    def counts(self) -> dict[str, int]:
        if not self.exists():
            return {"documents": 0, "chunks": 0}
        return {"documents": len(self.doc_hashes()), "chunks": self.chunks().count_rows()}


def _readable(hits: list[Hit], max_rank: int) -> list[Hit]:
    """The hits a reader at `max_rank` may see: the last guard of the access filter."""
    readable = [h for h in hits if h.row["access_rank"] <= max_rank]
    if len(readable) < len(hits):
        log.warning("a search at access rank %d returned %d rows above it (dropped): the table changed "
                    "during the search", max_rank, len(hits) - len(readable))
    return readable


def _hits(result: pa.Table, score_column: str, exact_for: np.ndarray | None = None) -> list[Hit]:
    """Hits from a search result; vectors go to numpy in one copy, not row by row.

    With `exact_for` (the query vector of a dense search) each hit is scored by its exact cosine
    and the hits are ordered by it: the IVF_SQ index ranks by quantised distances, which are far
    off on real embeddings (awsdocs-dev: 0.17 where the vectors give 0.59, some below 0), and the
    answerability gate reads these scores."""
    dim = result.schema.field("vector").type.list_size
    vectors = result["vector"].combine_chunks().flatten().to_numpy().reshape(result.num_rows, dim)
    rows = result.select([c for c in result.column_names if c not in ("vector", score_column)]).to_pylist()
    if exact_for is None:
        scores = result[score_column].to_pylist()
        return [Hit(row, vector, float(score)) for row, vector, score in zip(rows, vectors, scores)]
    scores = vectors @ np.asarray(exact_for, dtype=np.float32)
    return [Hit(rows[i], vectors[i], float(scores[i])) for i in np.argsort(-scores, kind="stable")]
