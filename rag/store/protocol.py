"""Index: what retrieval, the engine and the indexer need of an index, so another vector store
is one class with these methods (Store is the LanceDB one). Errors are StoreError subclasses
(errors.py); a Hit's row holds at least chunk_id, doc_path and access_rank, and a full-text
hit's also search_text (its term coverage weighs the list, rag/retrieval.py)."""
from __future__ import annotations

from typing import Any, Awaitable, Iterable, Protocol

import numpy as np
import pyarrow as pa

from rag.store.schema import Hit


class Index(Protocol):
    # -- searches and reads (rag/retrieval.py, rag/engine.py) --------------------------------
    def dense(self, vector: np.ndarray, max_rank: int, limit: int,
              within: frozenset[str] | None = None) -> Awaitable[list[Hit]]:
        """Top `limit` chunks at `max_rank` or below by cosine similarity (Hit.score), best first;
        `within`: only chunks of these documents (a channel's scope, rag/scope.py)."""
        ...

    def text(self, query: str, max_rank: int, limit: int, within: frozenset[str] | None = None) -> Awaitable[list[Hit]]:
        """Top `limit` chunks at `max_rank` or below by BM25 score (Hit.score), best first; `within` as dense's."""
        ...

    def rows(self, chunk_ids: list[str]) -> Awaitable[dict[str, dict[str, Any]]]:
        """Whole rows (without vectors) of the chunks that still exist, by id."""
        ...

    def doc_rows(self, doc_path: str, max_rank: int) -> Awaitable[list[dict[str, Any]]]:
        """Whole rows, with their `vector`, of one document's chunks at `max_rank` or below, in order."""
        ...

    def documents(self) -> Awaitable[tuple[str, ...]]:
        """The indexed documents' paths, sorted."""
        ...

    def languages(self) -> Awaitable[dict[str, int]]:
        """Documents per language ("" = the docs' default language) in the index."""
        ...

    def labels(self, chunk_ids: list[str]) -> Awaitable[dict[str, tuple[str, str]]]:
        """(page, language) of the chunks that still exist, by id (rag/formats/language.py)."""
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
