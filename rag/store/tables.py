"""The index's LanceDB tables: opening and pinning them, metadata, the vector cache, writes, and
the per-document and per-row reads that need no ranking.

Tables: `chunks` (searched), `vectors` (embedding cache keyed by text hash, so no text is ever
embedded twice) and `meta` (model, dimension, chunking, indexed commit, last sync outcome).
Every write of chunks is one `merge_insert`, so a reader sees a document's old chunks or its new
ones, never neither, and a writer killed half-way leaves the previous version in place. After
each commit to chunks or meta the summary beside the tables is rewritten (rag/index_summary.py).
"""
from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Callable, Iterable, Iterator

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree

from rag.store.errors import IndexMissing, StoreError, WriteRefused, same_embedding, store_errors
from rag.store.schema import (CHUNKS, META, TEXT_SEARCHED, VECTORS, meta_table, sql_list, vector_array,
                               vector_matrix)
from rag.index_summary import IndexSummary, current_manifests, write_summary
from rag.store.writes import add_columns, streamed_write

log = logging.getLogger("docsbot.index")
SUMMARISED = (CHUNKS, META)  # the tables the summary describes: what `docsbot status` shows
# Lance's metadata cache (manifests, file footers) of this process's connection. By default
# it kept the manifest of every version read, and a first sync commits the vector cache
# many times with each manifest listing every fragment so far: it grew with the square of the
# saves (250 saves of 40 vectors: 16 MB in the cache, +44 MB RSS; +23 MB with this bound).
METADATA_CACHE_BYTES = 16 << 20


def index_chunks(table: Any) -> None:
    """The full-text and scalar indexes the chunks table lacks (the vector index comes later:
    ann.py): all of them on a new table; on an existing one, at its next maintain(), the FTS
    index of a column added to TEXT_SEARCHED, so that needs no rebuild."""
    present = {tuple(index.columns) for index in table.list_indices()}
    wanted = [*((column, FTS()) for column in TEXT_SEARCHED), ("access_rank", Bitmap()), ("chunk_id", BTree())]
    for column, config in wanted:
        if (column,) not in present:
            table.create_index(column, config=config)


@dataclass
class _View:
    """The open tables reads go through. A pinned view (a replica's local mirror, mirror.py)
    reads exactly the given table versions; pinning new ones replaces the whole view, so a read
    that already holds a table finishes on the version it started with."""

    pins: dict[str, int] | None = None  # table -> version; None: the latest (refreshed)
    tables: dict[str, Any] = field(default_factory=dict)
    reader: Any | None = None  # the chunks table on LanceDB's async API (searches)


@store_errors
class Tables:
    def __init__(self, uri: str, refresh_s: float | None = 2.0, label: str | None = None,
                 replica: Callable[[], dict[str, Any]] | None = None) -> None:
        self.uri = uri
        self.label = label or uri  # what messages call the index (a mirror's bucket, not its folder)
        self._interval = timedelta(seconds=refresh_s) if refresh_s is not None else None
        self._db = lancedb.connect(uri, read_consistency_interval=self._interval,
                                   session=lancedb.Session(metadata_cache_size_bytes=METADATA_CACHE_BYTES))
        self._view = _View()
        # (table version, documents per language, the documents' paths), read once per version
        self._census: tuple[int, dict[str, int], tuple[str, ...]] | None = None
        self._replica = replica  # the status of what keeps a pinned store current (a replica's mirror)
        # Asked right before each commit that changes what readers see: None, or why this process
        # must not write (sync/lease.py: the index-writer lease was lost). The vector cache is
        # not asked: it maps a text's hash to its vector, so a late write there is harmless.
        self._may_write: Callable[[], str | None] | None = None

    # -- tables -----------------------------------------------------------------------------
    def pin(self, versions: dict[str, int]) -> None:
        """Read these table versions from now on (a table not named is missing); reads already
        under way finish on the versions they started with."""
        self._view = _View(dict(versions))
        self._forget()

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

    def replica_status(self) -> dict[str, Any] | None:
        """What a replica's mirror serves and whether its bucket answers (mirror.py); None otherwise."""
        return self._replica() if self._replica is not None else None

    @contextmanager
    def guarded(self, may_write: Callable[[], str | None]) -> Iterator[None]:
        """Inside the block, every commit readers would see first asks `may_write` (None, or why
        not) and is refused with WriteRefused when it names a reason (the lease, sync/lease.py)."""
        self._may_write = may_write
        try:
            yield
        finally:
            self._may_write = None

    # -- metadata -----------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        table = self._table(META)
        if table is None:
            return {}
        rows = table.to_arrow().to_pylist()
        return {row["key"]: json.loads(row["value"]) for row in rows}

    def _before_commit(self) -> None:
        reason = self._may_write() if self._may_write is not None else None
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
        self._summarise()

    def check_embedding(self, model: str, dim: int) -> dict[str, Any]:
        """The index's metadata; IndexMismatch when it was built with another embedding model."""
        return same_embedding(self.meta(), model, dim)

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
            found.update(zip(result["text_hash"].to_pylist(), vector_matrix(result)))
        return found

    def cached_hashes(self, text_hashes: list[str]) -> set[str]:
        table = self._table(VECTORS)
        found: set[str] = set()
        if table is None:
            return found
        for start in range(0, len(text_hashes), 500):
            batch = text_hashes[start:start + 500]
            rows = table.search().where(f"text_hash IN ({sql_list(batch)})").select(["text_hash"])
            found.update(rows.limit(len(batch)).to_arrow()["text_hash"].to_pylist())
        return found

    def cached_table(self) -> pa.Table | None:
        """The whole vector cache (text_hash, vector), or None when there is none yet."""
        table = self._table(VECTORS)
        return None if table is None else table.to_arrow()

    def cache_vectors(self, text_hashes: list[str], vectors: np.ndarray) -> None:
        """Add the vectors of the hashes the cache lacks. An append of those found missing, not a
        merge_insert: a first sync saves many times (dozens of commits on 10k chunks), and
        merge_insert's joins made its peak RSS grow with them (807 awsdocs pages, a free stand-in
        embedder saving per batch: 482-489 -> 396-403 MB). A writer adding the same hash in
        between leaves a second row with the same vector: lookups take either."""
        if not text_hashes:
            return
        table = self._table(VECTORS)
        if table is None:
            data = pa.table({"text_hash": text_hashes, "vector": vector_array(vectors)})
            self._view.tables[VECTORS] = self._db.create_table(VECTORS, data)
            return
        present = self.cached_hashes(text_hashes)
        keep = [i for i, text_hash in enumerate(text_hashes) if text_hash not in present]
        if keep:
            table.add(pa.table({"text_hash": [text_hashes[i] for i in keep], "vector": vector_array(vectors[keep])}))

    def reset(self) -> None:
        """Drop everything (a rebuild with another embedding model)."""
        self._before_commit()
        for name in (CHUNKS, VECTORS, META):
            if self._table(name) is not None:
                self._db.drop_table(name)
        self._view = _View()
        self._wrote()

    # -- writes -------------------------------------------------------------------------------
    def write(self, rows: pa.Table | pa.RecordBatchReader, replace_paths: Iterable[str] | None) -> None:
        """Upsert rows and delete the other chunks of the touched paths, in one commit.

        replace_paths=None means a full rebuild: every chunk not in `rows` is deleted. A reader is
        read as the write goes (memory bounded by its batches) and commits only once it has ended:
        an error while it is read leaves the table as it was, and is raised as it was raised.
        """
        self._before_commit()
        table = self._table(CHUNKS)
        if table is None:
            # A first build creates the table from its rows, one commit at the end: a sync killed
            # half-way leaves no table (or one Lance never committed) rather than an empty index.
            self._view.tables[CHUNKS] = table = streamed_write(
                lambda data: self._db.create_table(CHUNKS, data, mode="overwrite"), rows, self._before_commit)
            index_chunks(table)
            self._wrote()
            return
        add_columns(table, rows.schema)
        paths = None if replace_paths is None else sorted(set(replace_paths))
        if isinstance(rows, pa.Table) and rows.num_rows == 0:
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
            streamed_write(merge.execute, rows, self._before_commit)
        self._wrote()

    def replace(self, name: str, data: pa.Table) -> None:
        """Swap a table's whole content for `data` in one commit: a new version of the same table,
        so readers keep the old rows until it lands and none of the old files is read (it works
        on an index whose data files are damaged, and on object stores)."""
        self._before_commit()
        table = self._view.tables[name] = self._db.create_table(name, data, mode="overwrite")
        if name == CHUNKS:
            index_chunks(table)  # until these exist, searches scan (slower, same results)
        self._wrote()

    def chunk_count(self) -> int:
        """Rows of the chunks table; IndexMissing when there is no index."""
        return self.chunks().count_rows()

    def counts(self) -> dict[str, int]:
        """Documents (each has one first chunk: counting those reads one int column, 2-4 ms at
        100k rows against ~100 ms for listing the documents) and chunks."""
        if not self.exists():
            return {"documents": 0, "chunks": 0}
        return {"documents": self.chunks().count_rows("ordinal = 0"), "chunks": self.chunk_count()}

    def _wrote(self) -> None:
        """This process's searches reopen the table, so they see its own writes at once (other
        processes see them within the read consistency interval)."""
        self._view.reader = None
        self._forget()
        self._summarise()

    def _forget(self) -> None:
        """Drop what was read once per table version (subclasses add theirs)."""
        self._census = None

    def _summarise(self) -> None:
        """Rewrite the summary after a commit. A summary that cannot be written is only slower
        to do without (`docsbot status` then sees that it is older than the index, and reads
        the index): one warning, and the write that was made stands."""
        try:
            # Listed first: a commit landing while this counts makes the summary older, never wrong.
            manifests = current_manifests(self.uri, SUMMARISED)
            meta, counts = self.meta(), self.counts()
            write_summary(self.uri, IndexSummary(counts["documents"], counts["chunks"], meta.get("commit"),
                                                 meta.get("commit_date"), manifests))
        except (StoreError, OSError) as exc:
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            log.warning("could not write the summary of the index at %s (%s): `docsbot status` reads the index "
                        "instead until the next write", self.label, reason)


def read_tables(uri: str, *names: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of each named table of the LanceDB database at `uri` (none for a table it does
    not have): for tables kept beside an index that the store does not manage (the answer log of
    earlier versions, state/legacy.py). Lance's own errors pass through, unwrapped."""
    db = lancedb.connect(uri)
    present = set(db.list_tables().tables)
    return {name: db.open_table(name).to_arrow().to_pylist() if name in present else [] for name in names}
