"""The index: chunks with their vectors, a BM25 index beside them, metadata and an embedding cache.

`Index` (protocol.py) is what retrieval, the engine and the indexer call; `Store` is the LanceDB
index that provides it, built up in layers: tables.py (tables, metadata, vector cache, writes,
row reads), ann.py (the IVF vector index: building, retraining, probes), search.py (dense search
routed between that index and a flat scan, full-text search). errors.py turns Lance and I/O
failures into StoreErrors that say what to do; mirror.py keeps a replica's local copy of an index
on object storage (`open_index`).
"""
from __future__ import annotations

import os

# The Rust logger prints scan and index-build notices at WARN; lancedb reads LANCEDB_LOG (and
# pylance LANCE_LOG) once, at import, so before any module here imports it. Deprecations are
# fixed in the queries (see search.py).
for _variable in ("LANCEDB_LOG", "LANCE_LOG"):
    os.environ.setdefault(_variable, "error")

from rag.store.deferred import NAMESPACE_CLIENT, defer_package_init  # noqa: E402

defer_package_init(NAMESPACE_CLIENT)  # before lancedb is imported below: see deferred.py

from rag.store.errors import IndexMismatch, IndexMissing, IndexUnreadable, StoreError, WriteRefused  # noqa: E402
from rag.store.protocol import Index  # noqa: E402
from rag.store.schema import CHUNKS, META, VECTORS, Hit, chunk_schema, meta_table, vector_array  # noqa: E402
from rag.store.search import Store  # noqa: E402
from rag.store.tables import read_tables  # noqa: E402
from rag.store.mirror import open_index  # noqa: E402

__all__ = [
    "CHUNKS", "META", "VECTORS", "Hit", "Index", "IndexMismatch", "IndexMissing", "IndexUnreadable", "Store",
    "StoreError", "WriteRefused", "chunk_schema", "meta_table", "open_index", "read_tables", "vector_array",
]
