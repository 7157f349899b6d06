"""A sync of several sources (DOCSBOT_SOURCES) into one index: each source on its own.

Each source is synced as one repository is (sync/service.py), against its part of the index
(sync/source_index.py): its own commit, its own incremental diff or reconcile, its own links and
levels. A source that fails (a fetch refused, a repository gone) keeps its rows and its last good
commit, its error is recorded for `status`, `doctor` and the Home tab, and the others go on; the
sync fails only when every source it ran failed. A source no longer in the file has its documents
removed by the first write of the sync (one commit with that source's changes), or by a write
of their own when no source changed. `was = "old"` moves the old name's working copy to the new
one (no new clone) and drops the old name's rows in the new name's own first write, so a
rename never shows the docs missing; vectors come from the cache either way.
"""
from __future__ import annotations

import logging
import shutil
import time
from collections.abc import Callable
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

SyncOne = Callable[[SyncConfig, Index, Embedder | None, float, WriterLease], SyncReport]


def sync_sources(
    config: SyncConfig, store: Index, embedder: Embedder | None, lease: WriterLease, sync_one: SyncOne,
    only: frozenset[str] | None = None,
) -> SyncReport:
    """Sync every source (or those named in `only`), then drop the documents of sources no longer
    configured; the report adds up the sources' and lists each (`sources`)."""
    assert config.sources is not None
    sources = config.sources()
    started = time.perf_counter()
    stored = _stored_sources(store)
    kept = {s.name for s in sources} | {s.was for s in sources if s.was and s.was not in {x.name for x in sources}}
    dropped = sorted(stored - kept)
    gone = [p for p in store.doc_hashes() if source_of(p)[0] in dropped]  # removed with the first write
    total = SyncReport(mode="sources", deleted=len(gone))
    failed: list[str] = []
    outcomes: dict[str, dict[str, str]] = {}  # each source's error and time, written once at the end
    for source in sources:
        if only is not None and source.name not in only:
            continue
        renamed = _take_over(source, stored)
        own = [p for p in store.doc_hashes() if renamed and source_of(p)[0] == source.was]
        part = SourceIndex(store, source.name, own, gone)
        try:
            report = sync_one(source.sync, cast(Index, part), embedder, time.perf_counter(), lease)
        except Exception as exc:
            message = redact(str(exc)) or type(exc).__name__
            log.warning("source %s: sync failed, it keeps serving its last good commit: %s", source.name, message)
            outcomes[source.name] = {"error": message, "failed_at": _now()}
            total.sources[source.name] = {"error": message}
            failed.append(source.name)
            continue
        outcomes[source.name] = {"error": "", "last_success_at": _now()}
        if renamed:
            _forget(store, source.was)
            report.renamed += report.added
            report.added = 0
        total.add(source.name, report)
    _record_outcomes(store, outcomes)
    if gone:  # no source wrote: the dropped sources' documents go in a write of their own
        store.write(chunk_schema(_dim(store)).empty_table(), gone)
        gone.clear()
    for name in dropped:
        _forget(store, name)
        total.sources[name] = {"removed": True}
    total.seconds = time.perf_counter() - started
    ran = [name for name, part in total.sources.items() if "removed" not in part]
    if ran and len(failed) == len(ran):
        raise SyncError("every source failed: " + "; ".join(f"{n}: {total.sources[n]['error']}" for n in failed))
    total.warnings += [f"source {n} failed, serving its last good commit: {total.sources[n]['error']}" for n in failed]
    return total


def _stored_sources(store: Index) -> set[str]:
    """The sources the index holds documents or metadata of."""
    names = {source_of(p)[0] for p in store.doc_hashes()} | set(sources_meta(store.meta()))
    return names - {""}


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


def _record_outcomes(store: Index, outcomes: dict[str, dict[str, str]]) -> None:
    """The sources' errors and times, in one metadata write after them all: a write costs ~0.1 s
    (a commit, then the index summary): one per source was most of a no-op sync of several."""
    if outcomes:
        every = sources_meta(store.meta())
        store.set_meta(sources={name: every.get(name, {}) | outcomes.get(name, {}) for name in every | outcomes})


def _forget(store: Index, name: str) -> None:
    every = sources_meta(store.meta())
    if every.pop(name, None) is not None:
        store.set_meta(sources=every)


def _dim(store: Index) -> int:
    embedding: dict[str, Any] = store.meta().get("embedding") or {}
    return int(embedding.get("dim", 0))


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")

