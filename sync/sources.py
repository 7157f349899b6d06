"""A sync of several sources (DOCSBOT_SOURCES) into one index: each source on its own.

Each source is synced as one repository is (sync/service.py), against its part of the index
(sync/source_index.py): its own commit, its own incremental diff or reconcile, its own links and
levels. A source that fails (a fetch refused, a repository gone) keeps its rows and its last good
commit, its error is recorded for `status`, `doctor` and the Home tab, and the others go on; the
sync fails only when every source it ran failed. A source no longer in the file has its documents
removed by the first write of the sync (one commit with that source's changes), or by a write
of their own when no source changed. `was = "old"` moves the old name's working copy to the new
one (no new clone) and drops the old name's rows in the new name's own first write, so a
rename never shows the docs missing; vectors come from the cache either way. The index is
maintained, and the sources' metadata written, once after every source (see sync_sources).
"""
from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from typing import Any, cast

from rag import Embedder, Index
from rag.store import chunk_schema
from sync.config import SourceConfig, SyncConfig
from sync.errors import SyncError
from sync.gitcmd import redact
from sync.lease import WriterLease
from sync.report import SyncReport
from sync.source_index import SourceIndex, source_of, sources_meta
from sync.workcopy import work_dir

log = logging.getLogger("docsbot.sync")

# A source's sync (service.sync_store), given the head its fetch brought (None: a folder).
SyncOne = Callable[[SyncConfig, Index, Embedder | None, float, WriterLease, str | None], SyncReport]
Fetch = Callable[[SyncConfig], str | None]  # a source's fetch (service.fetch_head)
# Fetches run at once: each is mostly a wait on the remote (a local one: on git's own process),
# so N sources' fetches take about as long as the slowest few rather than as their sum.
FETCHES_AT_ONCE = 4


def sync_sources(
    config: SyncConfig, store: Index, embedder: Embedder | None, lease: WriterLease, sync_one: SyncOne,
    fetch: Fetch, only: frozenset[str] | None = None,
) -> SyncReport:
    """Sync every source (or those named in `only`), then drop the documents of sources no longer
    configured; the report adds up the sources' and lists each (`sources`).

    Each source's rows are written by its own sync; what every source would otherwise do after
    its write is done once after them all: the index's maintenance, then one metadata write with
    every source's commit, error and time. A source's commit is still claimed only after its
    rows are in (a sync killed before the end re-applies its diff next time, cheaply: the vectors
    are cached), and a source that failed keeps its last good commit."""
    assert config.sources is not None
    sources = config.sources()
    started = time.perf_counter()
    hashes = store.doc_hashes()  # read once: each source's part takes its own documents from it
    stored = _stored_sources(store, hashes)
    dropped = sorted(stored - _kept(sources, hashes))
    gone = [p for p in hashes if source_of(p)[0] in dropped]  # removed with the first write
    total = SyncReport(mode="sources", deleted=len(gone))
    failed: list[str] = []
    parts: list[SourceIndex] = []
    recorded: dict[str, dict[str, Any]] = {}  # each source's commit, error and time: written once at the end
    forgotten = set(dropped)
    chosen = [source for source in sources if only is None or source.name in only]
    renames = {source.name: _take_over(source, stored) for source in chosen}  # before their fetches
    heads = _fetch_all(chosen, fetch)
    for source in chosen:
        renamed = renames[source.name]
        own = [p for p in hashes if source_of(p)[0] == source.was] if renamed else []
        part = SourceIndex(store, source.name, own, gone, stored=hashes)
        parts.append(part)
        try:
            head = heads[source.name]
            if isinstance(head, Exception):
                raise head
            report = sync_one(source.sync, cast(Index, part), embedder, time.perf_counter(), lease, head)
        except Exception as exc:
            message = redact(str(exc)) or type(exc).__name__
            log.warning("source %s: sync failed, it keeps serving its last good commit: %s", source.name, message)
            recorded[source.name] = {"error": message, "failed_at": _now()}
            total.sources[source.name] = {"error": message}
            failed.append(source.name)
            continue
        recorded[source.name] = part.recorded | {"error": "", "last_success_at": _now()}
        if renamed:
            forgotten.add(source.was)
            report.renamed += report.added
            report.added = 0
        total.add(source.name, report)
    if gone:  # no source wrote: the dropped sources' documents go in a write of their own
        store.write(chunk_schema(_dim(store)).empty_table(), gone)
        gone.clear()
    if maintain := [part.maintain_rows for part in parts if part.maintain_rows is not None]:
        store.maintain(maintain[-1])  # once, after every write (a failed source's rows may be in too)
    _record_sources(store, recorded, forgotten)
    for name in dropped:
        total.sources[name] = {"removed": True}
    total.seconds = time.perf_counter() - started
    ran = [name for name, part in total.sources.items() if "removed" not in part]
    if ran and len(failed) == len(ran):
        raise SyncError("every source failed: " + "; ".join(f"{n}: {total.sources[n]['error']}" for n in failed))
    total.warnings += [f"source {n} failed, serving its last good commit: {total.sources[n]['error']}" for n in failed]
    return total


def _fetch_all(sources: list[SourceConfig], fetch: Fetch) -> dict[str, str | None | Exception]:
    """Each source's fetched head, or why its fetch failed (the source then fails alone)."""
    if not sources:
        return {}
    with ThreadPoolExecutor(min(FETCHES_AT_ONCE, len(sources)), thread_name_prefix="fetch") as pool:
        futures = {source.name: pool.submit(fetch, source.sync) for source in sources}
    heads: dict[str, str | None | Exception] = {}
    for name, future in futures.items():
        try:
            heads[name] = future.result()
        except Exception as exc:
            heads[name] = exc
    return heads


def _stored_sources(store: Index, hashes: dict[str, str]) -> set[str]:
    """The sources the index holds documents (`hashes`: its doc_hashes()) or metadata of."""
    names = {source_of(p)[0] for p in hashes} | set(sources_meta(store.meta()))
    return names - {""}


def _kept(sources: tuple[SourceConfig, ...], hashes: dict[str, str]) -> set[str]:
    """The sources whose documents stay: those in the file, and the old name of a source renamed
    with `was` until the new name holds documents (a sync that wrote them and was killed before
    its metadata write leaves the old name's metadata behind: the next one drops it)."""
    names = {s.name for s in sources}
    with_documents = {source_of(p)[0] for p in hashes}
    return names | {s.was for s in sources if s.was and s.was not in names and s.name not in with_documents}


def _take_over(source: SourceConfig, stored: set[str]) -> bool:
    """A source renamed with `was`: its old working copy becomes its own (no new clone). True when
    the index still holds the old name's documents, which its first write replaces."""
    if not source.was or source.was not in stored or source.name in stored:
        return False
    new = work_dir(source.sync)
    old = new.parent / source.was
    if old.is_dir() and not new.exists():
        shutil.move(old, new)
    return True


def _record_sources(store: Index, recorded: dict[str, dict[str, Any]], forgotten: set[str]) -> None:
    """Every source's metadata (its commit, error and time) in one write after them all, without
    the sources `forgotten` (dropped, or renamed): a write costs ~0.1 s (a commit, then the index
    summary), and one per source was most of a no-op sync of several."""
    every = sources_meta(store.meta())
    if recorded or forgotten & set(every):
        store.set_meta(sources={name: every.get(name, {}) | recorded.get(name, {})
                                for name in (every.keys() | recorded.keys()) - forgotten})


def _dim(store: Index) -> int:
    embedding: dict[str, Any] = store.meta().get("embedding") or {}
    return int(embedding.get("dim", 0))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")

