"""What `docsbot status` and `/docs status` show: the indexed commit and counts (from the index),
the last sync's outcome, the writer holding the lease and the waiting requests (state store).

`docsbot status` reads the index's part from its summary (rag.read_summary) when that is current,
so that it need not load LanceDB (most of its start time); else from the index. On a SQLite state
file it reads the state store's part with the standard library (state.status_rows), so that it
need not load SQLAlchemy either; the state modules are imported only when that read cannot answer."""
from __future__ import annotations

import asyncio
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import rag  # its names load on use: the summary path never loads LanceDB
from state.status_rows import INDEX_WRITER, iso, read_sqlite
from sync.config import SyncConfig
from sync.report import short_commit
from rag.paths import source_of, sources_meta  # not sync.source_index: it loads Arrow

if TYPE_CHECKING:
    from rag import Index, IndexConfig
    from state.db import StateDB


async def recorded_status(db: StateDB) -> dict[str, Any]:
    """The state store's part of the status; when it cannot be read, says so instead."""
    from state.db import StateUnavailable
    from state.leases import Leases
    from state.sync_requests import SyncRequests
    from state.sync_status import SyncProgress, SyncStatus

    try:
        recorded = await SyncStatus(db).read()
        lease = await Leases(db).current(INDEX_WRITER)
        recorded["writer"] = lease.holder if lease else None
        recorded["writer_since"] = iso(lease.acquired_at) if lease else None
        recorded["syncing"], recorded["stopped"] = await SyncProgress(db).read(lease.holder if lease else None)
        recorded["pending_requests"] = await SyncRequests(db).pending()
    except StateUnavailable as exc:
        return unavailable(str(exc))
    return recorded


def unavailable(reason: str) -> dict[str, Any]:
    """The state store's part of the status when it cannot be read."""
    return {"last_sync": None, "last_success_at": None, "syncing": None, "stopped": None, "state_error": reason}


def read_status(store: Index, recorded: dict[str, Any]) -> dict[str, Any]:
    """The index's state and the state store's `recorded` part (with `syncing`: {"done",
    "total"} of a running sync, see sync.progress). An index whose chunks cannot be read is
    reported (`index_error`), with no counts, rather than as 0 documents. Blocking (reads the
    index): run it in a thread from async code."""
    return {"syncing": None, **index_status(store), **recorded}


def index_status(store: Index) -> dict[str, Any]:
    """The index's part of the status, read from the index."""
    meta = store.meta()
    try:
        counts: dict[str, int | None] = dict(store.counts())
        error = None
    except rag.StoreError as exc:
        counts, error = {"documents": None, "chunks": None}, str(exc)
    return {
        "mirror": store.replica_status(),
        "commit": meta.get("commit"),
        "commit_date": meta.get("commit_date"),
        **counts,
        "index_error": error,
        **({"sources": source_status(store, meta)} if sources_meta(meta) and error is None else {}),
    }


def source_status(store: Index, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Each source of several: its commit and its date, its documents, those a member (the `team`
    level) may read, and its last error (it then serves its last good commit)."""
    documents: dict[str, list[int]] = {}
    for path, (rank,) in store.doc_columns("access_rank").items():
        documents.setdefault(source_of(path)[0], []).append(rank)
    return [{"name": name, "commit": own.get("commit"), "commit_date": own.get("commit_date"),
             "documents": len(documents.get(name, [])),
             "readable": sum(rank <= rag.Level.team for rank in documents.get(name, [])),
             "error": own.get("error") or "", "failed_at": own.get("failed_at")}
            for name, own in sorted(sources_meta(meta).items())]


def summary_status(index: IndexConfig) -> dict[str, Any]:
    """The index's part of the status from its summary when that is current, else from the index."""
    try:
        summary, _ = rag.read_summary(index.location)
    except (OSError, ValueError):  # a bucket that cannot be read (the index read says why), a database
        summary = None
    if summary is None:
        return index_status(rag.open_index(index))
    return {"mirror": None, "commit": summary.commit, "commit_date": summary.commit_date,
            "documents": summary.documents, "chunks": summary.chunks, "index_error": None}


async def current_status(store: Index, db: StateDB) -> dict[str, Any]:
    return await asyncio.to_thread(read_status, store, await recorded_status(db))


def load_status(config: SyncConfig) -> dict[str, Any]:
    """The whole status, from synchronous code (`docsbot status`)."""
    def index_part() -> dict[str, Any]:
        # Several sources: their part is in the index's metadata, which the summary does not hold.
        return (index_status(rag.open_index(config.rag.index)) if config.sources is not None
                else summary_status(config.rag.index))

    recorded = read_sqlite(config.state.url, time.time())
    if recorded is not None:
        return {"syncing": None, **index_part(), **recorded}

    async def load() -> dict[str, Any]:
        from state.db import StateUnavailable
        from state.opening import open_state

        try:
            db = await open_state(config.state)
        except StateUnavailable as exc:  # the index's part can still be shown
            recorded = unavailable(str(exc))
        else:
            try:
                recorded = await recorded_status(db)
            finally:
                await db.close()
        return {"syncing": None, **index_part(), **recorded}

    return asyncio.run(load())


def render_status(status: dict[str, Any]) -> str:
    commit = status["commit"]
    lines = [] if status.get("sources") else [
        f"indexed commit: {_short(commit) + ' (' + (status['commit_date'] or '') + ')' if commit else '(none)'}"]
    lines += [
        f"documents: {status['documents']}, chunks: {status['chunks']}" if not status["index_error"]
        else f"index: UNREADABLE: {status['index_error']}",
    ]
    lines += [_source_line(source) for source in status.get("sources", [])]
    if status.get("mirror"):
        lines.append(_mirror_line(status["mirror"]))
    last, syncing = status["last_sync"], status.get("syncing")
    if syncing:
        lines.append(f"syncing: {syncing['done']:,} / {syncing['total']:,} chunks embedded")
    if "state_error" in status:
        lines.append(f"last sync: unknown ({status['state_error']})")
    elif status.get("stopped"):
        lines.append(f"last sync: FAILED: {stopped_cause(status['stopped'])}")
        lines.append(f"last successful sync: {status['last_success_at'] or 'never'}")
    elif last is None:
        if not syncing:
            lines.append("last sync: never")
    elif last["ok"]:
        report = last["report"]
        lines.append(
            f"last sync: ok at {last['at']} ({report['mode']}: {report['added']} added, {report['modified']} "
            f"modified, {report['deleted']} deleted, {report['renamed']} renamed, {len(report['skipped'])} skipped)"
        )
    else:
        lines.append(f"last sync: FAILED at {last['at']}: {last['error']}")
        lines.append(f"last successful sync: {status['last_success_at'] or 'never'}")
    if "writer" in status:
        writer = f"{status['writer']} (since {status['writer_since']})" if status["writer"] else "none running"
        lines.append(f"sync worker: {writer}; requests waiting: {status['pending_requests']}")
    return "\n".join(lines)


def _source_line(source: dict[str, Any]) -> str:
    """The source's line, and its failure on a line of its own (kept whole within a line's limit)."""
    commit = (f"{_short(source['commit'])} ({(source['commit_date'] or '')[:10]}{age_of(source['commit_date'])})"
              if source["commit"] else "(none)")
    line = (f"  source {source['name']}: {commit}, {source['documents']} documents "
            f"({source['readable']} readable at the team level)")
    if source["error"]:
        line += f"\n    FAILED at {source['failed_at']}, serving its last good commit: {source['error']}"
    return line


def age_of(date: str | None) -> str:
    """`, committed 3 hours ago`: how old a commit is, in the unit a reader takes in at a glance."""
    if not date:
        return ""
    seconds = max(0.0, (datetime.now(timezone.utc) - datetime.fromisoformat(date)).total_seconds())
    if seconds < 3600:
        return f", committed {seconds // 60:.0f} minutes ago"
    if seconds < 2 * 86400:
        return f", committed {seconds // 3600:.0f} hours ago"
    return f", committed {seconds // 86400:.0f} days ago"


def stopped_cause(holder: str) -> str:
    """The one line for a run that never said how it ended: its writer is gone (killed, or cut off
    from its disk or the state store long enough to lose the lease)."""
    return (f"the sync by {holder} stopped before it finished (its process died, or lost the index-writer "
            "lease: a full disk or an unreachable state store; its log says why); the index keeps its last "
            "good state")


def _mirror_line(mirror: dict[str, Any]) -> str:
    """Where a replica reads the index: its local copy of the bucket, and how current it is."""
    version = mirror["versions"].get("chunks")
    copy = f"version {version} copied at {mirror['taken_at']}" if version is not None else "nothing copied yet"
    if mirror["unreachable_since"]:
        return (f"served from a local copy of {mirror['mirror_of']} ({copy}); the bucket is unreachable since "
                f"{mirror['unreachable_since']}: {mirror['error']}")
    return f"served from a local copy of {mirror['mirror_of']} ({copy}); bucket checked at {mirror['checked_at']}"


def _short(commit: str) -> str:
    return short_commit(commit, 12)
