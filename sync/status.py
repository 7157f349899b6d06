"""What `docsbot status` and `/docs status` show: the indexed commit, counts, the last sync."""
from __future__ import annotations

from typing import Any

from rag.store import Store, StoreError


def read_status(store: Store) -> dict[str, Any]:
    """The status; an index whose chunks cannot be read is reported (`index_error`), with no
    counts, rather than as 0 documents."""
    meta = store.meta()
    try:
        counts: dict[str, int | None] = dict(store.counts())
        error = None
    except StoreError as exc:
        counts, error = {"documents": None, "chunks": None}, str(exc)
    return {
        "commit": meta.get("commit"),
        "commit_date": meta.get("commit_date"),
        **counts,
        "index_error": error,
        "last_sync": meta.get("last_sync"),
        "last_success_at": meta.get("last_success_at"),
    }


def render_status(status: dict[str, Any]) -> str:
    commit = status["commit"]
    lines = [
        f"indexed commit: {commit[:12] + ' (' + (status['commit_date'] or '') + ')' if commit else '(none)'}",
        f"documents: {status['documents']}, chunks: {status['chunks']}" if not status["index_error"]
        else f"index: UNREADABLE: {status['index_error']}",
    ]
    last = status["last_sync"]
    if last is None:
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
    return "\n".join(lines)
