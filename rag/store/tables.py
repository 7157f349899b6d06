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
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Callable, Iterable

import lancedb
import numpy as np
import pyarrow as pa
from lancedb.index import FTS, Bitmap, BTree

from rag.store.errors import IndexMismatch, IndexMissing, StoreError, WriteRefused, store_errors
from rag.store.schema import (CHUNKS, META, ROW_COLUMNS, ROW_DEFAULTS, VECTORS, access_filter, meta_table, sql_list,
                              vector_array, vector_matrix)
from rag.index_summary import IndexSummary, current_manifests, write_summary
from rag.store.writes import add_columns, streamed_write

if TYPE_CHECKING:
    from rag.store.ann import AnnState
    from rag.store.mirror import MirroredIndex

log = logging.getLogger("docsbot.index")
SUMMARISED = (CHUNKS, META)  # the tables the summary describes: what `docsbot status` shows


def index_chunks(table: Any) -> None:
    """The scalar and full-text indexes of a new chunks table (the vector index comes later: ann.py)."""
    table.create_index("search_text", config=FTS())
    table.create_index("access_rank", config=Bitmap())
    table.create_index("chunk_id", config=BTree())


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
    def __init__(self, uri: str, refresh_s: float | None = 2.0, label: str | None = None) -> None:
        self.uri = uri
        self.label = label or uri  # what messages call the index (a mirror's bucket, not its folder)
        self._interval = timedelta(seconds=refresh_s) if refresh_s is not None else None
        self._db = lancedb.connect(uri, read_consistency_interval=self._interval)
        self._view = _View()
        self._ann: AnnState | None = None  # the vector index's routing facts (ann.py), per table version
        # (table version, documents per language, the documents' paths), read once per version
        self._census: tuple[int, dict[str, int], tuple[str, ...]] | None = None
        self.mirror: MirroredIndex | None = None  # what keeps a pinned store current (a replica's copy)
        # Asked right before each commit that changes what readers see: None, or why this process
        # must not write (sync/lease.py: the index-writer lease was lost). The vector cache is
        # not asked: it maps a text's hash to its vector, so a late write there is harmless.
        self.may_write: Callable[[], str | None] | None = None

    # -- tables -----------------------------------------------------------------------------
    def pin(self, versions: dict[str, int]) -> None:
        """Read these table versions from now on (a table not named is missing); reads already
        under way finish on the versions they started with."""
        self._view = _View(dict(versions))
        self._ann = None
        self._census = None

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
        self._summarise()

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

    def _wrote(self) -> None:
        """This process's searches reopen the table, so they see its own writes at once (other
        processes see them within the read consistency interval)."""
        self._view.reader = None
        self._ann = None
        self._census = None
        self._summarise()

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

    # -- reads --------------------------------------------------------------------------------
    async def rows(self, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Whole rows (without vectors) of the given chunks, by id."""
        if not chunk_ids:
            return {}
        table = await self._searchable()
        columns = await _row_columns(table)
        query = table.query().where(f"chunk_id IN ({sql_list(chunk_ids)})").select(columns)
        rows = (await query.limit(len(chunk_ids)).to_arrow()).to_pylist()
        return {row["chunk_id"]: _with_defaults(row) for row in rows}

    async def doc_rows(self, doc_path: str, max_rank: int) -> list[dict[str, Any]]:
        """Whole rows (with their vectors) of one document's chunks at `max_rank` or below, in order."""
        table = await self._searchable()
        where = f"doc_path = {sql_list([doc_path])} AND {access_filter(max_rank)}"
        columns = await _row_columns(table)
        rows = (await table.query().where(where).select([*columns, "vector"]).to_arrow()).to_pylist()
        return sorted((_with_defaults(row) for row in rows), key=lambda row: row["ordinal"])

    async def languages(self) -> dict[str, int]:
        """Documents per language ("" = the docs' default) in the index, counted again only when
        the chunks table's version changes; none in an index written before languages were kept."""
        return dict((await self._documents())[1])

    async def documents(self) -> tuple[str, ...]:
        """The indexed documents' paths, sorted, listed again only when the chunks table's version
        changes (a channel's scope is matched against them, rag/scope.py)."""
        return (await self._documents())[2]

    async def _documents(self) -> tuple[int, dict[str, int], tuple[str, ...]]:
        table = await self._searchable()
        version = await table.version()
        if self._census is None or self._census[0] != version:
            has_language = "language" in (await table.schema()).names
            columns = ["doc_path", "language"] if has_language else ["doc_path"]
            # The first chunk of each document: one row per document.
            firsts = (await table.query().where("ordinal = 0").select(columns).to_arrow()).to_pylist()
            counts: dict[str, int] = {}
            for row in firsts if has_language else []:
                counts[row["language"] or ""] = counts.get(row["language"] or "", 0) + 1
            self._census = (version, counts, tuple(sorted(row["doc_path"] for row in firsts)))
        return self._census

    async def labels(self, chunk_ids: list[str]) -> dict[str, tuple[str, str]]:
        """(page, language) of the given chunks that still exist, by id; a row written before
        pages were kept is its own page, in the default language."""
        table = await self._searchable()
        if not chunk_ids or not {"page", "language"} <= set((await table.schema()).names):
            return {}
        query = table.query().where(f"chunk_id IN ({sql_list(chunk_ids)})")
        rows = (await query.select(["chunk_id", "doc_path", "page", "language"]).limit(len(chunk_ids)).to_arrow())
        return {row["chunk_id"]: (row["page"] or row["doc_path"], row["language"] or "") for row in rows.to_pylist()}

    def doc_hashes(self) -> dict[str, str]:
        """doc_path -> content hash of what is indexed (for reconcile and status)."""
        if not self.exists():
            return {}
        table = self.chunks().search().select(["doc_path", "doc_hash"]).limit(None).to_arrow()
        return dict(zip(table["doc_path"].to_pylist(), table["doc_hash"].to_pylist()))

    def includers(self, paths: Iterable[str]) -> list[str]:
        """The documents that include any of `paths` (a snippet, a partial): what a sync re-reads
        when only the included file changed."""
        changed = set(paths)
        if not changed or not self.exists() or "includes" not in self.chunks().schema.names:
            return []
        table = self.chunks().search().where("includes != ''").select(["doc_path", "includes"]).limit(None).to_arrow()
        pairs = zip(table["doc_path"].to_pylist(), table["includes"].to_pylist())
        return sorted({doc for doc, included in pairs if changed & set(included.split("\n"))})

    def doc_columns(self, *columns: str) -> dict[str, tuple]:
        """doc_path -> values of per-document columns (doc_hash, commit, ...) for each indexed
        document: what a sync compares with the files at head. A column an older index lacks
        reads as ROW_DEFAULTS says, here and in chunk_columns."""
        if not self.exists():
            return {}
        chunks = self.chunks()
        rows = chunks.search().select(["doc_path", *_present(chunks, columns)]).limit(None).to_arrow().to_pylist()
        return {row["doc_path"]: tuple(row.get(c) for c in columns) for row in map(_with_defaults, rows)}

    def chunk_columns(self, doc_paths: Iterable[str], *columns: str) -> list[dict[str, Any]]:
        """doc_path and the named columns of every chunk of these documents (none without an index)."""
        paths = sorted(set(doc_paths))
        if not paths or not self.exists():
            return []
        chunks = self.chunks()
        search = chunks.search().where(f"doc_path IN ({sql_list(paths)})")
        rows = search.select(["doc_path", *_present(chunks, columns)]).limit(None).to_arrow().to_pylist()
        return [{c: row.get(c) for c in ("doc_path", *columns)} for row in map(_with_defaults, rows)]

    def chunk_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk's id and vector (one row of the matrix each), in table order."""
        table = self.chunks().search().select(["chunk_id", "vector"]).limit(None).to_arrow()
        return table["chunk_id"].to_pylist(), vector_matrix(table)

    def chunk_count(self) -> int:
        """Rows of the chunks table; IndexMissing when there is no index."""
        return self.chunks().count_rows()

    def counts(self) -> dict[str, int]:
        """Documents (each has one first chunk: counting those reads one int column, 2-4 ms at
        100k rows against ~100 ms for listing the documents) and chunks."""
        if not self.exists():
            return {"documents": 0, "chunks": 0}
        return {"documents": self.chunks().count_rows("ordinal = 0"), "chunks": self.chunk_count()}


async def _row_columns(table: Any) -> list[str]:
    """The whole-row columns this version of the table has (an older index lacks the newer ones)."""
    present = set((await table.schema()).names)
    return [name for name in ROW_COLUMNS if name in present]


def _present(table: Any, columns: Iterable[str]) -> list[str]:
    """The named columns this version of the table has."""
    names = set(table.schema.names)
    return [name for name in columns if name in names]


def _with_defaults(row: dict[str, Any]) -> dict[str, Any]:
    for name, value in ROW_DEFAULTS.items():
        if row.get(name) is None:  # not in an older index, or null in its rows from before the migration
            row[name] = value
    return row


def read_tables(uri: str, *names: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of each named table of the LanceDB database at `uri` (none for a table it does
    not have): for tables kept beside an index that the store does not manage (the answer log of
    earlier versions, state/legacy.py). Lance's own errors pass through, unwrapped."""
    db = lancedb.connect(uri)
    present = set(db.list_tables().tables)
    return {name: db.open_table(name).to_arrow().to_pylist() if name in present else [] for name in names}
