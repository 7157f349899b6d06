"""The IVF_SQ vector index over the chunks table: when to build and retrain it, how many of its
partitions a search probes, and the per-version facts a dense search routes by (search.py).

Settings measured with `python -m eval bench` (README, "A million chunks").
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from lancedb.index import IvfSq

from rag.store.errors import store_errors
from rag.store.schema import VECTORS
from rag.store.reads import Reads
from rag.store.tables import index_chunks

# Reads of old versions must outlive a reader's refresh interval (see shared notes on cleanup).
CLEANUP_AFTER = timedelta(minutes=10)


@dataclass
class AnnState:
    """The vector-index routing facts of one table version (see Store.dense)."""

    version: int  # the table version they were read at
    has_index: bool
    min_rows: int  # ann_min_rows recorded by the last maintain()
    rows: int  # all rows of that version
    partition_rows: int  # rows per IVF partition the index was built with
    counts: dict[str, int] = field(default_factory=dict)  # a search's filter -> rows it passes

    async def passing(self, table: Any, where: str) -> int:
        """Rows a search's filter (access_filter) passes, counted once per version and filter."""
        if where not in self.counts:
            self.counts[where] = await table.count_rows(where)
        return self.counts[where]


@store_errors
class AnnIndex(Reads):
    # Rows per IVF partition, given to LanceDB as target_partition_size: it keeps that through
    # optimize(). A num_partitions is not kept: optimize() joins partitions smaller than its own
    # target, and 1,000 partitions of 1,000 rows became 57 of ~17,500 at 1M rows.
    ANN_PARTITION_ROWS = 4096
    # Indexes built before the partition size was recorded in meta had one partition per 1,000
    # rows (fewer once optimize() joined them): probes are sized for that until the next
    # maintain() rebuilds them, so an upgrade never probes too few partitions.
    LEGACY_PARTITION_ROWS = 1000
    ANN_PROBE_SCALE = 1.5  # see ann_nprobes()
    ANN_MIN_PROBES = 12
    ANN_RETRAIN = 1.5  # rebuild the index when the row count moves by this factor
    _ann: AnnState | None = None  # the vector index's routing facts, per table version

    def _forget(self) -> None:
        super()._forget()
        self._ann = None

    def maintain(self, ann_min_rows: int, cleanup_after: timedelta = CLEANUP_AFTER) -> None:
        """Compact, fold new rows into the FTS, bitmap and ANN indexes, build those the table
        lacks (index_chunks), and the ANN index once the table is large enough for it to beat a
        flat scan.

        `ann_min_rows` is recorded in meta: a reader routes a search whose access filter passes
        fewer rows than that to a flat scan, which is then faster and exact."""
        self._before_commit()
        table = self.chunks()
        if self.meta().get("ann_min_rows") != ann_min_rows:
            self.set_meta(ann_min_rows=ann_min_rows)
        table.optimize(cleanup_older_than=cleanup_after)
        index_chunks(table)
        self._wrote()
        rows, trained = table.count_rows(), self.meta().get("ann_trained_rows", 0)
        # optimize() adds new rows to the IVF partitions but never retrains them: rebuild when the
        # table has grown or shrunk by half since training, so partitions keep their size.
        stale = (not self.has_ann_index() or not trained / self.ANN_RETRAIN <= rows <= trained * self.ANN_RETRAIN
                 or self.meta().get("ann_partition_rows") != self.ANN_PARTITION_ROWS)
        if rows >= ann_min_rows and stale:
            self.build_ann_index()
        vectors = self._table(VECTORS)
        if vectors is not None:
            vectors.optimize(cleanup_older_than=cleanup_after)

    async def _ann_state(self, table: Any) -> AnnState:
        """What dense() needs to pick a route, read again only when the table version changes.

        A new version's vector index is loaded into LanceDB's cache first (~1 ms when it already
        is): partitions loaded one search at a time made the first ten searches after a rebuild
        take 121 ms on average at 1M rows, against 0.6 s to load all of them at once."""
        version = await table.version()
        if self._ann is None or self._ann.version != version:
            index = next((ix.name for ix in await table.list_indices() if ix.columns == ["vector"]), None)
            if index is not None:
                await table.prewarm_index(index)
            meta = self.meta()
            min_rows = int(meta.get("ann_min_rows", 0))
            partition_rows = int(meta.get("ann_partition_rows") or self.LEGACY_PARTITION_ROWS)
            self._ann = AnnState(version, index is not None, min_rows, await table.count_rows(), partition_rows)
        return self._ann

    def ann_partitions(self, rows: int, partition_rows: int | None = None) -> int:
        return max(1, rows // (partition_rows or self.ANN_PARTITION_ROWS))

    def ann_nprobes(self, rows: int, passing: int, partition_rows: int | None = None) -> int:
        """IVF partitions to probe when `passing` of the table's `rows` rows pass the access
        filter: ANN_PROBE_SCALE·sqrt(partitions / share passing), at least ANN_MIN_PROBES, at
        most all of them.

        More partitions need more probes for the same recall (about as their square root), and a
        filter needs more again: its rows cluster by topic (access levels follow folders), so the
        nearest rows a reader may see lie further out than the nearest rows overall. Below ~50
        partitions the square root falls short (recall@16 0.93-0.94 at 100k rows with 8-9 of 24).
        Measured with `python -m eval bench` (README, "A million chunks")."""
        partitions = self.ann_partitions(rows, partition_rows)
        share = max(passing, 1) / max(rows, 1)
        probes = math.ceil(self.ANN_PROBE_SCALE * math.sqrt(partitions / share))
        return min(partitions, max(self.ANN_MIN_PROBES, probes))

    def has_ann_index(self) -> bool:
        return any(ix.columns == ["vector"] for ix in self.chunks().list_indices())

    def build_ann_index(self) -> None:
        table = self.chunks()
        rows = table.count_rows()
        config = IvfSq(distance_type="cosine", target_partition_size=self.ANN_PARTITION_ROWS)
        table.create_index("vector", config=config, replace=True)
        self.set_meta(ann_trained_rows=rows, ann_partition_rows=self.ANN_PARTITION_ROWS)
        self._wrote()
