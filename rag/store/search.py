"""Store: the LanceDB index as a question searches it. Dense search routes between the IVF index
and a flat scan on the facts ann.py keeps per table version; full-text search runs on the BM25
index. The access filter runs inside each search, and is checked again on what comes back."""
from __future__ import annotations

import functools
import logging
from typing import Any

import numpy as np
from opentelemetry import trace

from rag.store.ann import AnnIndex
from rag.store.errors import store_errors
from rag.store.schema import SEARCH_COLUMNS, Hit, access_filter, fts_query, to_hits

log = logging.getLogger(__name__)
_TRACER = trace.get_tracer(__name__)


@store_errors
class Store(AnnIndex):
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
    async def text(self, query: str, max_rank: int, limit: int, within: frozenset[str] | None = None) -> list[Hit]:
        words = fts_query(query)
        if not words or within is not None and not within:
            return []
        table = await self._searchable()
        search = (
            table.query()
            .nearest_to_text(words, columns="search_text")
            .where(access_filter(max_rank, within))
            # search_text: for the list's term coverage (rag/retrieval.py)
            .select([*SEARCH_COLUMNS, "search_text", "_score"])
            .limit(limit)
        )
        return to_hits(await search.to_arrow(), "_score")


def _readable(hits: list[Hit], max_rank: int, within: frozenset[str] | None = None) -> list[Hit]:
    """The hits a reader at `max_rank` may see (in `within`): the last guard of the filter."""
    readable = [h for h in hits if h.row["access_rank"] <= max_rank and (within is None or h.row["doc_path"] in within)]
    if len(readable) < len(hits):
        log.warning("a search at access rank %d returned %d rows above it (dropped): the table changed "
                    "during the search", max_rank, len(hits) - len(readable))
    return readable
