"""Index: the one type every caller outside rag/store/ is written against (retrieval, the engine,
the indexer, the sync, status, doctor, the bot's reports, eval), so another vector store is one
class with these methods plus its line in registry.py (the LanceDB one is search.Store, the
Postgres one postgres.PgIndex). Errors are StoreError subclasses (errors.py); a Hit's row holds
at least chunk_id, doc_path and access_rank, and a full-text hit's also the column it searched
(its term coverage weighs the list, rag/signals.py). Column reads fill the columns an older
index lacks as schema.ROW_DEFAULTS says."""
from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import timedelta
from typing import Any, Callable, ClassVar, Iterable, Protocol, runtime_checkable

import numpy as np
import pyarrow as pa

from rag.store.schema import Hit


class Index(Protocol):
    # -- searches and reads (rag/retrieval.py, rag/engine.py) --------------------------------
    async def dense(self, vector: np.ndarray, max_rank: int, limit: int,
              within: frozenset[str] | None = None) -> list[Hit]:
        """Top `limit` chunks at `max_rank` or below by cosine similarity (Hit.score), best first;
        `within`: only chunks of these documents (a channel's scope, rag/scope.py)."""
        ...

    async def text(self, query: str, max_rank: int, limit: int, within: frozenset[str] | None = None,
                   column: str = "search_text") -> list[Hit]:
        """Top `limit` chunks at `max_rank` or below by BM25 score (Hit.score) of their `column`, one of
        schema.TEXT_SEARCHED (ValueError otherwise), best first; `within` as dense's."""
        ...

    async def rows(self, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Whole rows (without vectors) of the chunks that still exist, by id."""
        ...

    async def doc_rows(self, doc_path: str, max_rank: int) -> list[dict[str, Any]]:
        """Whole rows, with their `vector`, of one document's chunks at `max_rank` or below, in order;
        none for a path no document can have (schema.storable: a NUL, a lone surrogate)."""
        ...

    async def documents(self) -> tuple[str, ...]:
        """The indexed documents' paths, sorted."""
        ...

    async def languages(self) -> dict[str, int]:
        """Documents per language ("" = the docs' default language) in the index."""
        ...

    async def labels(self, chunk_ids: list[str]) -> dict[str, tuple[str, str]]:
        """(page, language) of the chunks that still exist, by id (rag/formats/language.py)."""
        ...

    # -- per-document and per-chunk columns (sync, status, doctor, the bot's reports) --------------
    def counts(self) -> dict[str, int]:
        """{"documents": n, "chunks": n}; zeros without an index."""
        ...

    def chunk_count(self) -> int:
        """Chunks in the index; IndexMissing when there is none."""
        ...

    def doc_columns(self, *columns: str) -> dict[str, tuple]:
        """doc_path -> the values of these per-document columns (doc_hash, commit, access_rank...)."""
        ...

    def chunk_columns(self, doc_paths: Iterable[str], *columns: str) -> list[dict[str, Any]]:
        """doc_path and the named columns of every chunk of these documents (none without an index)."""
        ...

    def includers(self, paths: Iterable[str]) -> list[str]:
        """The documents that include any of `paths` (a snippet, a partial), sorted."""
        ...

    def chunk_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk's id and vector (one row of the matrix each)."""
        ...

    def all_rows(self) -> pa.Table:
        """Every chunk's whole row (chunk_schema's columns, vector included), by chunk id."""
        ...

    def replica_status(self) -> dict[str, Any] | None:
        """What a replica serves from its local copy and whether the source answers (`/docs
        status`); None when this process reads the index itself."""
        ...

    # -- metadata ------------------------------------------------------------------------------
    def meta(self) -> dict[str, Any]: ...

    def set_meta(self, **values: Any) -> None: ...

    def check_embedding(self, model: str, dim: int) -> dict[str, Any]:
        """meta(); IndexMismatch when the index was built with another embedding model."""
        ...

    # -- indexing (rag/indexer.py) --------------------------------------------------------------
    def exists(self) -> bool: ...

    def doc_hashes(self) -> dict[str, str]:
        """doc_path -> content hash of each indexed document."""
        ...

    def cached_vectors(self, text_hashes: list[str]) -> dict[str, np.ndarray]:
        """The embedding cache's vectors of these texts (by text hash), where it has them."""
        ...

    def cached_hashes(self, text_hashes: list[str]) -> set[str]:
        """Those of these text hashes whose vectors the embedding cache has (vectors not read)."""
        ...

    def cache_vectors(self, text_hashes: list[str], vectors: np.ndarray) -> None: ...

    def reset(self) -> None:
        """Drop everything (a rebuild with another embedding model)."""
        ...

    def write(self, rows: pa.Table, replace_paths: Iterable[str] | None) -> None:
        """Upsert chunk rows and delete the other chunks of `replace_paths` (None: of every
        document), in one commit."""
        ...

    def maintain(self, ann_min_rows: int) -> None:
        """Bring the search indexes up to date after writes."""
        ...

    def guarded(self, may_write: Callable[[], str | None]) -> AbstractContextManager[None]:
        """Inside the block, each commit readers would see first asks `may_write`: None, or why
        this process must not write (the index-writer lease, sync/lease.py), which stops it with
        WriteRefused."""
        ...

    def rebuild(self, build: Callable[["Index"], pa.Table], meta: dict[str, Any], reuse_vectors: bool) -> None:
        """Replace the whole index: `build` makes every row, given a scratch index for its vector
        cache (seeded from this one's when `reuse_vectors`); then the rows, the vectors and `meta`
        are swapped in. Readers see the old index until the swap, and a rebuild that fails
        leaves it as it was."""
        ...


@runtime_checkable
class IvfTuned(Index, Protocol):
    """An index whose dense search routes through an IVF vector index probed by a tuned count
    (LanceDB's, rag/store/ann.py): what `eval bench` and `eval sweep` measure and vary."""

    ANN_PARTITION_ROWS: ClassVar[int]
    ANN_PROBE_SCALE: float

    def maintain(self, ann_min_rows: int, cleanup_after: timedelta = ...) -> None: ...

    def has_ann_index(self) -> bool: ...

    def build_ann_index(self) -> None: ...

    def ann_partitions(self, rows: int, partition_rows: int | None = None) -> int: ...

    def ann_nprobes(self, rows: int, passing: int, partition_rows: int | None = None) -> int: ...
