"""`docsbot index --rebuild`: a new index built beside the old one, then swapped in.

Everything is built from the docs alone: the store builds the rows in a scratch index (the old
index is read only for its vector cache, and only if it can be read) and then swaps them in
(`Index.rebuild`). Until the swap lands every reader keeps answering from the old index, and
nothing of the old rows is needed, so it also repairs an index whose data is damaged.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

import pyarrow as pa

from rag.engine import Engine
from rag.indexer import IndexStats, Provenance, build_rows, chunking_signature
from rag.owners import Ownership, front_matter_of
from rag.store import Index, StoreError

log = logging.getLogger(__name__)
T = TypeVar("T")

# Sync state that describes the old rows, not the rebuilt ones: the next sync reconciles.
_STALE_META = ("commit", "commit_date", "sync_signature", "ann_trained_rows")


def rebuild_index(engine: Engine, root: Path, provenance: dict[str, Provenance]) -> IndexStats:
    config, store = engine.config, engine.store
    started = time.perf_counter()
    docs, skipped = config.docs.read_folder(root)
    old_meta: dict[str, Any] = _readable(store.meta, {}, "metadata")
    before: dict[str, str] = _readable(store.doc_hashes, {}, "list of documents")
    embedding = {"model": engine.embedder.name, "dim": engine.embedder.dim}
    built: list[IndexStats] = []

    def build(scratch: Index) -> pa.Table:
        rows, stats = build_rows(docs, provenance, scratch, engine.embedder, config)
        built.append(stats)
        return rows

    meta: dict[str, Any] = {k: v for k, v in old_meta.items() if k not in _STALE_META}
    meta.update(embedding=embedding, chunking=chunking_signature(config.chunking), docs_root=str(root.resolve()),
                ownership=Ownership(front_matter_of(docs)).with_repository(root).to_meta())
    # Vectors of another model are never reused.
    store.rebuild(build, meta, reuse_vectors=old_meta.get("embedding") == embedding)
    store.maintain(config.index.ann_min_rows)
    stats = built[0]
    stats.skipped = skipped
    stats.deleted = len(set(before) - {d.path for d in docs})
    stats.seconds = time.perf_counter() - started
    return stats


def _readable(read: Callable[[], T], fallback: T, what: str) -> T:
    try:
        return read()
    except StoreError:
        log.warning("the old index's %s cannot be read: rebuilt without it", what)
        return fallback
