"""`docsbot index --rebuild`: a new index built beside the old one, then swapped in.

Everything is built from the docs alone, in a scratch LanceDB folder (the old index is read only
for its vector cache, and only if it can be read), then each table of the real index is replaced
by one commit that writes a new version of it (`Store.replace`). Until the chunks table's commit
lands, every reader keeps answering from the old version; nothing of the old files is needed, so
it also repairs an index whose data files are damaged. The same steps work when the index lives
on an object store (s3://...): only the scratch folder is local.
"""
from __future__ import annotations

import logging
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, TypeVar

from rag.engine import Engine
from rag.indexer import IndexStats, Provenance, build_rows, chunking_signature
from rag.owners import Ownership, front_matter_of
from rag.store import CHUNKS, META, VECTORS, Store, StoreError, meta_table

log = logging.getLogger(__name__)
T = TypeVar("T")

# Sync state that describes the old rows, not the rebuilt ones: the next sync reconciles.
_STALE_META = ("commit", "commit_date", "sync_signature", "ann_trained_rows")


def rebuild_index(engine: Engine, root: Path, provenance: dict[str, Provenance]) -> IndexStats:
    config, store = engine.config, engine.store
    started = time.perf_counter()
    docs, skipped = config.docs.read_folder(root)
    old_meta: dict[str, Any] = _readable(store.meta, {}, "metadata")
    embedding = {"model": engine.embedder.name, "dim": engine.embedder.dim}
    with tempfile.TemporaryDirectory(prefix="docsbot-rebuild-") as scratch_dir:
        scratch = Store(scratch_dir, refresh_s=None)
        if old_meta.get("embedding") == embedding:  # vectors of another model are never reused
            _seed_vector_cache(scratch, store)
        rows, stats = build_rows(docs, provenance, scratch, engine.embedder, config)
        vectors = scratch.cached_table()
        before: dict[str, str] = _readable(store.doc_hashes, {}, "list of documents")
        if vectors is not None:
            store.replace(VECTORS, vectors)
        store.replace(CHUNKS, rows)  # the swap: readers see the new index from here
    meta: dict[str, Any] = {k: v for k, v in old_meta.items() if k not in _STALE_META}
    meta.update(embedding=embedding, chunking=chunking_signature(config.chunking), docs_root=str(root.resolve()),
                ownership=Ownership(front_matter_of(docs)).with_repository(root).to_meta())
    store.replace(META, meta_table(meta))
    store.maintain(config.index.ann_min_rows)
    stats.skipped = skipped
    stats.deleted = len(set(before) - {d.path for d in docs})
    stats.seconds = time.perf_counter() - started
    return stats


def _seed_vector_cache(scratch: Store, store: Store) -> None:
    """Vectors of the old index's cache, when it can be read: unchanged text is not embedded again."""
    cached = _readable(store.cached_table, None, "vector cache")
    if cached is not None and cached.num_rows:
        scratch.replace(VECTORS, cached)


def _readable(read: Callable[[], T], fallback: T, what: str) -> T:
    try:
        return read()
    except StoreError:
        log.warning("the old index's %s cannot be read: rebuilt without it", what)
        return fallback
