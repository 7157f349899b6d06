"""Store: the LanceDB index as a question searches it, and rebuilt. Dense search routes between the IVF index
and a flat scan on the facts ann.py keeps per table version; full-text search runs on the BM25
index. The access filter runs inside each search, and is checked again on what comes back."""
from __future__ import annotations

import functools
import logging
import tempfile
from typing import Any, Callable

import numpy as np
import pyarrow as pa
from opentelemetry import trace

from rag.store.ann import AnnIndex
from rag.store.errors import StoreError, store_errors
from rag.store.protocol import Index
from rag.store.schema import (CHUNKS, META, SEARCH_COLUMNS, VECTORS, Hit, access_filter, meta_table,
                              text_search_words, to_hits)

log = logging.getLogger(__name__)
_TRACER = trace.get_tracer(__name__)


@store_errors
class Searches(AnnIndex):
    @_TRACER.start_as_current_span("search.dense")
    async def dense(self, vector: np.ndarray, max_rank: int, limit: int,
                    within: frozenset[str] | None = None) -> list[Hit]:
        """Top `limit` chunks by cosine similarity among those at `max_rank` or below (and of the
        documents `within`, a channel's scope, when given: filtered the same way).

        The route comes from counts made once per table version (bitmap index): a filter passing
        fewer than `ann_min_rows` rows scans them flat, exactly; otherwise the ANN index probes
        ann_nprobes() of its partitions, then all of them if that found fewer than `limit` rows.
        The access filter runs inside the search unless every row of the version passes it (it
        costs ~20% at 1M rows even then). Rows above `max_rank` are dropped from every result
        all the same: a version written between the count and the search can cost hits, never
        leak one."""
        if within is not None and not within:
            return []
        table = await self._searchable()
        state = await self._ann_state(table)
        where = access_filter(max_rank, within)
        passing = await state.passing(table, where)
        search = functools.partial(self._nearest, table, vector, limit, None if passing == state.rows else where)
        if not (state.has_index and passing >= state.min_rows):
            return _readable(await search(None), max_rank, within)
        size = state.partition_rows
        nprobes, partitions = self.ann_nprobes(state.rows, passing, size), self.ann_partitions(state.rows, size)
        hits = _readable(await search(nprobes), max_rank, within)
        if len(hits) < min(limit, passing) and nprobes < partitions:
            hits = _readable(await search(partitions), max_rank, within)
        return hits

    @staticmethod
    async def _nearest(
        table: Any, vector: np.ndarray, limit: int, where: str | None, nprobes: int | None
    ) -> list[Hit]:
        """One vector search: filtered by `where` unless None, through the ANN index probing
        `nprobes` partitions, or a flat scan when that is None."""
        query = (
            table.query()
            .nearest_to(np.asarray(vector, dtype=np.float32))
            .distance_type("cosine")
            .select([*SEARCH_COLUMNS, "_distance"])  # named, or lance warns that it will drop it
            .limit(limit)
        )
        if where is not None:
            query = query.where(where)
        # minimum/maximum_nprobes would not save work: LanceDB 0.40 always probed the maximum.
        # No refine step: SQ distances alone kept recall@16 at 0.97 and were faster (eval bench);
        # the rows found are then scored and ordered by their exact cosine (to_hits).
        query = query.bypass_vector_index() if nprobes is None else query.nprobes(nprobes)
        return to_hits(await query.to_arrow(), "_distance", exact_for=vector)

    @_TRACER.start_as_current_span("search.text")
    async def text(self, query: str, max_rank: int, limit: int, within: frozenset[str] | None = None,
                   column: str = "search_text") -> list[Hit]:
        words = text_search_words(query, column, within)
        if not words:
            return []
        table = await self._searchable()
        search = (
            table.query()
            .nearest_to_text(words, columns=column)
            .where(access_filter(max_rank, within))
            # the column searched: for the list's term coverage (rag/signals.py)
            .select([*SEARCH_COLUMNS, column, "_score"])
            .limit(limit)
        )
        return to_hits(await search.to_arrow(), "_score")


class Store(Searches):
    """The LanceDB index. Not under store_errors: a rebuild's `build` raises its own errors (the
    embedder's), which must reach the caller as they are; the table steps it calls are wrapped."""

    def rebuild(self, build: Callable[[Index], pa.Table], meta: dict[str, Any], reuse_vectors: bool) -> None:
        """Everything is built in a scratch LanceDB folder (the old index is read only for its
        vector cache, and only if it can be read), then each table here is replaced by one commit
        that writes a new version of it (`replace`): until the chunks table's commit lands, readers
        answer from the old version, and none of the old files is needed (it repairs an index whose
        data files are damaged). Only the scratch folder is local, so it works on object stores."""
        with tempfile.TemporaryDirectory(prefix="docsbot-rebuild-") as folder:
            scratch = Store(folder, refresh_s=None)
            cached = self._old_vectors() if reuse_vectors else None
            if cached is not None and cached.num_rows:
                scratch.replace(VECTORS, cached)
            rows = build(scratch)
            vectors = scratch.cached_table()
            if vectors is not None:
                self.replace(VECTORS, vectors)
            self.replace(CHUNKS, rows)  # the swap: readers see the new index from here
        self.replace(META, meta_table(meta))

    def _old_vectors(self) -> pa.Table | None:
        try:
            return self.cached_table()
        except StoreError:
            log.warning("the old index's vector cache cannot be read: rebuilt without it")
            return None


def _readable(hits: list[Hit], max_rank: int, within: frozenset[str] | None = None) -> list[Hit]:
    """The hits a reader at `max_rank` may see (in `within`): the last guard of the filter."""
    readable = [h for h in hits if h.row["access_rank"] <= max_rank and (within is None or h.row["doc_path"] in within)]
    if len(readable) < len(hits):
        log.warning("a search at access rank %d returned %d rows above it (dropped): the table changed "
                    "during the search", max_rank, len(hits) - len(readable))
    return readable
