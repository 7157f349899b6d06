"""One source's part of the shared index, as the sync of that source sees it.

With several sources (DOCSBOT_SOURCES) every document's path is stored as `<source>:<path>`, so
two repositories may both hold `README.md`, and a citation, a channel scope or MCP's `read_doc`
names the source. A source's sync is the one-repository sync run against `SourceIndex`: paths
go in and come out without the prefix (the rows' links, levels and freshness are made from the
source's own settings, rag/indexer.py, before the prefix is added), only the source's documents
are seen, and the metadata a sync keeps (commit, signature, docs root, owners) is kept per source
under `sources.<name>`. Everything else (the vector cache, the embedding, maintenance) is the
shared index's own.

Two things a part leaves to the sync of all sources (sync/sources.py), to do once after them all
rather than once per source: the source's metadata (`recorded`: its commit written after its
rows, as ever, only later, in the one metadata write of every source), and the maintenance of
the index after its write (`maintain_rows`), each ~0.1-0.3 s a source.
"""
from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import pyarrow as pa

from rag import Index
from rag.paths import SOURCE_SEPARATOR as SEPARATOR, source_of, sources_meta

__all__ = ["SourceIndex", "chunk_id", "source_of", "sources_meta"]

# The metadata each source keeps for itself; the rest of the index's metadata is shared.
SOURCE_META = frozenset({"commit", "commit_date", "sync_signature", "docs_root", "ownership", "error",
                         "failed_at", "last_success_at"})


class SourceIndex:
    """`store` restricted to the documents of the source `name` (see the module docstring);
    `also_remove` are lists of stored paths of other sources (a source dropped from the file, the
    old name of a renamed one) that the next write removes in the same commit, emptying the list
    (a list shared by several sources' parts is written by the first of them that writes).

    `stored` is the whole index's doc_hashes() as read before this source's sync (by the sync of
    all sources, once): the source's own documents are taken from it until its own first write,
    since no other source's write changes them. Reading them again for each source (twice, to
    count them) was most of a no-op sync of several."""

    def __init__(self, store: Index, name: str, *also_remove: list[str], stored: dict[str, str] | None = None) -> None:
        self.store = store
        self.name = name
        self.prefix = f"{name}{SEPARATOR}"
        self.also_remove = also_remove
        self._hashes = None if stored is None else self._own(stored)
        self._counts: dict[str, int] | None = None
        self.recorded: dict[str, Any] = {}  # the source's own metadata, not yet written
        self.maintain_rows: int | None = None  # the ann_min_rows of a maintenance left to do

    def __getattr__(self, attribute: str) -> Any:  # the shared parts: vector cache, maintenance...
        return getattr(self.store, attribute)

    def _mine(self, doc_path: str) -> bool:
        return doc_path.startswith(self.prefix)

    def _strip(self, doc_path: str) -> str:
        return doc_path[len(self.prefix):]

    # -- reads ------------------------------------------------------------------------------------
    def doc_columns(self, *columns: str) -> dict[str, tuple]:
        return {self._strip(p): v for p, v in self.store.doc_columns(*columns).items() if self._mine(p)}

    def doc_hashes(self) -> dict[str, str]:
        if self._hashes is None:
            self._hashes = self._own(self.store.doc_hashes())
        return dict(self._hashes)

    def _own(self, hashes: dict[str, str]) -> dict[str, str]:
        return {self._strip(p): h for p, h in hashes.items() if self._mine(p)}

    def includers(self, paths: Iterable[str]) -> list[str]:
        return [self._strip(p) for p in self.store.includers(paths) if self._mine(p)]

    def counts(self) -> dict[str, int]:
        if self._counts is None:
            paths = [self.prefix + p for p in self.doc_hashes()]
            self._counts = {"documents": len(paths), "chunks": len(self.store.chunk_columns(paths)) if paths else 0}
        return dict(self._counts)

    def chunk_count(self) -> int:
        return self.counts()["chunks"]

    # -- metadata ---------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        meta = self.store.meta()
        shared = {k: v for k, v in meta.items() if k not in SOURCE_META and k != "sources"}
        return shared | sources_meta(meta).get(self.name, {}) | self.recorded

    def set_meta(self, **values: Any) -> None:
        """The shared values are written now; the source's own are kept in `recorded`, for the
        sync of all sources to write (see the module docstring)."""
        self.recorded |= {k: v for k, v in values.items() if k in SOURCE_META}
        shared = {k: v for k, v in values.items() if k not in SOURCE_META}
        if shared:
            self.store.set_meta(**shared)

    def maintain(self, ann_min_rows: int) -> None:
        """Left to the sync of all sources, after the last source's write."""
        self.maintain_rows = ann_min_rows

    # -- writes -----------------------------------------------------------------------------------
    def write(self, rows: pa.Table | pa.RecordBatchReader, replace_paths: Iterable[str] | None) -> None:
        """The rows with their paths and chunk ids made the source's; `None` replaces every
        document of this source (not of the index)."""
        replaced = [self.prefix + p for p in (replace_paths if replace_paths is not None else self.doc_hashes())]
        others = [path for paths in self.also_remove for path in paths]
        batches = rows.to_batches() if isinstance(rows, pa.Table) else rows
        self._hashes = self._counts = None  # read again after it (a write that fails may have done part)
        self.store.write(pa.RecordBatchReader.from_batches(rows.schema, self._prefixed(batches)), replaced + others)
        for paths in self.also_remove:
            paths.clear()

    def _prefixed(self, batches: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            columns = {name: batch.column(name) for name in batch.schema.names}
            columns["doc_path"] = pa.array([self.prefix + p for p in columns["doc_path"].to_pylist()], pa.string())
            columns["chunk_id"] = pa.array([chunk_id(self.name, c) for c in columns["chunk_id"].to_pylist()],
                                           pa.string())
            yield pa.RecordBatch.from_arrays([columns[n] for n in batch.schema.names], schema=batch.schema)


def chunk_id(source: str, chunk: str) -> str:
    """A chunk's id made unique across sources (the one-repository id hashes the path alone)."""
    return hashlib.sha1(f"{source}\x00{chunk}".encode()).hexdigest()[:20]
