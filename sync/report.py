"""The outcome of one sync: what changed, what was embedded, how long it took."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rag import shorten


@dataclass
class FileCounts:
    """Files a sync added, modified, deleted, renamed or left unchanged, and those it skipped."""

    added: int = 0
    modified: int = 0
    deleted: int = 0
    renamed: int = 0
    unchanged: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)


@dataclass
class SyncReport(FileCounts):
    mode: str = "unchanged"  # "incremental" (git diff), "reconcile" (content hashes) or "unchanged"
    reason: str = ""  # why a reconcile was needed
    commit_before: str | None = None
    commit_after: str | None = None
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)  # what the person running it should fix
    unindexed: list[str] = field(default_factory=list)  # files the globs leave out, by reason (rag/unindexed.py)
    # Several sources (sync/sources.py): each one's report, or its error, or that it was removed.
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)

    def add(self, name: str, part: "SyncReport") -> None:
        """One source's report, added up into this sync's."""
        for counted in ("added", "modified", "deleted", "renamed", "unchanged", "chunks_embedded", "chunks_reused"):
            setattr(self, counted, getattr(self, counted) + getattr(part, counted))
        self.skipped += [(f"{name}:{path}", reason) for path, reason in part.skipped]
        self.warnings += [f"{name}: {warning}" for warning in part.warnings]
        self.unindexed += [f"{name}: {line}" for line in part.unindexed]
        self.sources[name] = part.to_json()

    def to_json(self) -> dict[str, Any]:
        return {
            "commit_before": self.commit_before,
            "commit_after": self.commit_after,
            "added": self.added,
            "modified": self.modified,
            "deleted": self.deleted,
            "renamed": self.renamed,
            "unchanged": self.unchanged,
            "skipped": [{"path": path, "reason": shorten(reason)} for path, reason in self.skipped],
            "chunks_embedded": self.chunks_embedded,
            "chunks_reused": self.chunks_reused,
            "seconds": round(self.seconds, 3),
            "mode": self.mode,
            "reason": self.reason,
            "warnings": self.warnings,
            "unindexed": self.unindexed,
            **({"sources": self.sources} if self.sources else {}),
        }

    def render(self) -> str:
        before, after = _short(self.commit_before), _short(self.commit_after)
        head = f"{before} → {after}" if before != after else f"at {after}"
        lines = [
            f"sync{' ' + head if self.commit_after else ''} ({self.mode}{': ' + self.reason if self.reason else ''}): "
            f"{self.added} added, {self.modified} modified, {self.deleted} deleted, {self.renamed} renamed, "
            f"{self.unchanged} unchanged; {self.chunks_embedded} chunks embedded, {self.chunks_reused} reused "
            f"in {self.seconds:.2f}s"
        ]
        lines += [f"  {name}: {_source_line(part)}" for name, part in self.sources.items()]
        lines += [f"skipped {_one_line(path)}: {_one_line(shorten(reason))}" for path, reason in self.skipped]
        lines += [f"not indexed: {line}" for line in self.unindexed]
        lines += [f"warning: {warning}" for warning in self.warnings]
        return "\n".join(lines)


def _source_line(part: dict[str, Any]) -> str:
    if part.get("removed"):
        return "removed from the sources file: its documents were removed"
    if part.get("error"):
        return f"FAILED, serving its last good commit: {part['error']}"
    return (f"{_short(part['commit_after'])} ({part['mode']}): {part['added']} added, {part['modified']} modified, "
            f"{part['deleted']} deleted, {part['renamed']} renamed, {part['chunks_embedded']} chunks embedded")


def _one_line(text: str) -> str:
    """`text`, or its repr when it holds a newline, tab or other control character."""
    return text if text.isprintable() else repr(text)


def _short(commit: str | None) -> str:
    return short_commit(commit) if commit else "(none)"


def short_commit(commit: str, digits: int = 7) -> str:
    """The abbreviated commit, keeping a "+dirty" mark (read from a work tree with local edits)."""
    sha, plus, mark = commit.partition("+")
    return sha[:digits] + plus + mark
