"""The index: chunks with their vectors, a full-text index beside them, metadata and an embedding cache.

`Index` (protocol.py) is the port every caller is written against; `open_index` (registry.py)
opens one from config. Adapters: LanceDB (a folder, s3://...), built up in layers: tables.py
(tables, metadata, vector cache, writes), reads.py (row and column reads), ann.py (the IVF
vector index: building, retraining, probes), search.py (dense search routed between that index
and a flat scan, full-text search, rebuilds), mirror.py (a replica's local copy of an index on
object storage); Postgres with pgvector (postgresql://..., postgres.py). errors.py turns a
store's failures into StoreErrors that say what to do.
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
from rag.store.protocol import Index, IvfTuned  # noqa: E402
from rag.store.schema import CHUNKS, META, VECTORS, Hit, chunk_schema, meta_table, vector_array  # noqa: E402
from rag.store.tables import read_tables  # noqa: E402
from rag.store.registry import open_index  # noqa: E402

__all__ = [
    "CHUNKS", "META", "VECTORS", "Hit", "Index", "IndexMismatch", "IvfTuned", "IndexMissing", "IndexUnreadable",
    "StoreError", "WriteRefused", "chunk_schema", "meta_table", "open_index", "read_tables", "vector_array",
]
