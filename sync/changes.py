"""What a sync must do, from `git diff --name-status -M <indexed> <head>`.

Paths are relative to the docs subfolder and kept only when in scope (include/exclude globs, no
hidden folder). A rename whose old or new side is out of scope becomes an add or a delete. A
changed hidden file the globs select is reported as skipped (as a full reconcile reports it), and
so is a file whose name is not UTF-8 (never indexed, so never removed either).
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag import HIDDEN, NOT_UTF8_NAME, in_scope, matches, not_utf8, shown_path
from sync.gitcmd import FileChange, diff_name_status, touched_paths


@dataclass(frozen=True)
class Scope:
    subdir: str
    include: Sequence[str]
    exclude: Sequence[str]

    def rel(self, repo_path: str) -> str | None:
        """The doc path of a repository path, or None when it is not indexed."""
        rel = self._under(repo_path)
        return rel if rel is not None and self.covers(rel) else None

    def undecodable(self, repo_path: str) -> str | None:
        """The doc path, as shown in a report, of an in-scope file whose name is not UTF-8."""
        rel = self.rel(repo_path)
        return shown_path(rel) if rel is not None and not_utf8(rel) else None

    def hidden(self, repo_path: str) -> str | None:
        """The doc path of a hidden file (`.github/x.md`) the globs select: skipped, not indexed."""
        rel = self._under(repo_path)
        if rel is None or self.covers(rel) or not matches(rel, self.include, self.exclude):
            return None
        return shown_path(rel)

    def _under(self, repo_path: str) -> str | None:
        prefix = self.subdir.strip("/") + "/" if self.subdir.strip("/") else ""
        return repo_path[len(prefix):] if repo_path.startswith(prefix) else None

    def covers(self, rel: str) -> bool:
        return in_scope(rel, self.include, self.exclude)


@dataclass
class ChangeSet:
    upsert: list[str] = field(default_factory=list)  # doc paths to (re)index from the work tree
    removed: list[str] = field(default_factory=list)  # doc paths whose chunks leave the index
    added: int = 0
    modified: int = 0
    deleted: int = 0
    renamed: int = 0
    counted_as: dict[str, str] = field(default_factory=dict)  # upserted doc path -> the count it is in
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason) of hidden files changed
    # Every doc-relative path a commit in between touched, in scope or not (a partial is not a
    # page, but the pages that include it change with it).
    touched: set[str] = field(default_factory=set)

    def classify(self, change: FileChange, scope: Scope) -> None:
        old, new = (None if scope.undecodable(path) else scope.rel(path) for path in (change.old, change.new))
        hidden = scope.hidden(change.new) if change.status != "D" else None
        if hidden:
            self.skipped.append((hidden, HIDDEN))
        if change.status != "D" and (undecodable := scope.undecodable(change.new)):
            self.skipped.append((undecodable, NOT_UTF8_NAME))
        if change.status == "R" and old and new:
            self.removed.append(old)
            self._upsert(new, "renamed")
        elif change.status in ("R", "D") and old:  # a rename out of scope is a delete
            self.removed.append(old)
            self.deleted += 1
        elif change.status in ("R", "A", "C") and new:  # a rename into scope is an add
            self._upsert(new, "added")
        elif change.status in ("M", "T") and new:
            self._upsert(new, "modified")

    def _upsert(self, path: str, count: str) -> None:
        self.upsert.append(path)
        self.counted_as[path] = count
        setattr(self, count, getattr(self, count) + 1)

    def include_changed(self, includers: list[str]) -> None:
        """Documents whose included file changed are re-read (counted as modified)."""
        listed = set(self.upsert) | set(self.removed)
        for path in includers:
            if path not in listed:
                self._upsert(path, "modified")

    def uncount(self, skipped: list[tuple[str, str]]) -> None:
        """A file that was skipped is reported as skipped only, not also as added or modified."""
        for path, _ in skipped:
            count = self.counted_as.pop(path, None)
            if count:
                setattr(self, count, getattr(self, count) - 1)


def changes_between(repo: Path, old: str, new: str, scope: Scope) -> ChangeSet:
    """The change set from `old` to `new`, plus the files whose content is the same but that a
    commit in between touched (an edit and its revert): their last commit, date and links moved,
    so they are re-stamped too (their vectors come from the cache)."""
    changes = ChangeSet()
    for change in diff_name_status(repo, old, new, scope.subdir):
        changes.classify(change, scope)
    listed = set(changes.upsert) | set(changes.removed)
    root = repo / scope.subdir.strip("/")
    changes.touched = touched_paths(repo, old, new, scope.subdir)
    for rel in sorted(changes.touched - listed):
        if scope.covers(rel) and not not_utf8(rel) and os.path.isfile(root / rel):  # False for a name too long
            changes.upsert.append(rel)
    return changes
