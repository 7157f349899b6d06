"""One source's part of the shared index, as the sync of that source sees it.

With several sources (DOCSBOT_SOURCES) every document's path is stored as `<source>:<path>`, so
two repositories may both hold `README.md`, and a citation, a channel scope or MCP's `read_doc`
names the source. A source's sync is the one-repository sync run against `SourceIndex`: paths
go in and come out without the prefix (the rows' links, levels and freshness are made from the
source's own settings, rag/indexer.py, before the prefix is added), only the source's documents
are seen, and the metadata a sync keeps (commit, signature, docs root, owners) is kept per source
under `sources.<name>`. Everything else (the vector cache, the embedding, maintenance) is the
shared index's own.
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
    (a list shared by several sources' parts is written by the first of them that writes)."""

    def __init__(self, store: Index, name: str, *also_remove: list[str]) -> None:
        self.store = store
        self.name = name
        self.prefix = f"{name}{SEPARATOR}"
        self.also_remove = also_remove

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
        return {self._strip(p): h for p, h in self.store.doc_hashes().items() if self._mine(p)}

    def includers(self, paths: Iterable[str]) -> list[str]:
        return [self._strip(p) for p in self.store.includers(paths) if self._mine(p)]

    def counts(self) -> dict[str, int]:
        paths = [p for p in self.store.doc_hashes() if self._mine(p)]
        return {"documents": len(paths), "chunks": len(self.store.chunk_columns(paths)) if paths else 0}

    def chunk_count(self) -> int:
        return self.counts()["chunks"]

    # -- metadata ---------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]:
        meta = self.store.meta()
        shared = {k: v for k, v in meta.items() if k not in SOURCE_META and k != "sources"}
        return shared | sources_meta(meta).get(self.name, {})

    def set_meta(self, **values: Any) -> None:
        own = {k: v for k, v in values.items() if k in SOURCE_META}
        shared = {k: v for k, v in values.items() if k not in SOURCE_META}
        if own:
            every = sources_meta(self.store.meta())
            every[self.name] = every.get(self.name, {}) | own
            shared["sources"] = every
        self.store.set_meta(**shared)

    # -- writes -----------------------------------------------------------------------------------
    def write(self, rows: pa.Table | pa.RecordBatchReader, replace_paths: Iterable[str] | None) -> None:
        """The rows with their paths and chunk ids made the source's; `None` replaces every
        document of this source (not of the index)."""
        replaced = ([self.prefix + p for p in replace_paths] if replace_paths is not None
                    else [p for p in self.store.doc_hashes() if self._mine(p)])
        for paths in self.also_remove:
            replaced += paths
            paths.clear()
        batches = rows.to_batches() if isinstance(rows, pa.Table) else rows
        self.store.write(pa.RecordBatchReader.from_batches(rows.schema, self._prefixed(batches)), replaced)

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
