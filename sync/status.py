"""What `docsbot status` and `/docs status` show: the indexed commit, counts, the last sync."""
from __future__ import annotations

from typing import Any

from rag.store import Store


def read_status(store: Store, progress: dict[str, int] | None = None) -> dict[str, Any]:
    """The index's state; `progress` ({"done", "total"}, see sync.progress) of a running sync."""
    meta = store.meta()
    return {
        "syncing": progress,
        "commit": meta.get("commit"),
        "commit_date": meta.get("commit_date"),
        **store.counts(),
        "last_sync": meta.get("last_sync"),
        "last_success_at": meta.get("last_success_at"),
    }


def render_status(status: dict[str, Any]) -> str:
    commit = status["commit"]
    lines = [
        f"indexed commit: {_short(commit) + ' (' + (status['commit_date'] or '') + ')' if commit else '(none)'}",
        f"documents: {status['documents']}, chunks: {status['chunks']}",
    ]
    last, syncing = status["last_sync"], status.get("syncing")
    if syncing:
        lines.append(f"syncing: {syncing['done']:,} / {syncing['total']:,} chunks embedded")
    if last is None:
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
    return "\n".join(lines)


def _short(commit: str) -> str:
    """12 hex digits, keeping a "+dirty" mark (`docsbot index` of a modified work tree)."""
    sha, plus, mark = commit.partition("+")
    return sha[:12] + plus + mark
