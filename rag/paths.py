"""Which files of a docs folder are documents: include and exclude globs, the folder walk, and
what it leaves out on purpose (symbolic links, hidden files, names the file system or Slack cannot
hold), each with its reason. Reading a file is rag/documents.py's.
"""
from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rag.formats import format_for

NAME_MAX, PATH_MAX = 255, 4096  # Linux: bytes in one path component; bytes in a path with its NUL


def glob_match(path: str, pattern: str) -> bool:
    """Match a POSIX relative path against a glob where `**` spans folders and `*` does not."""
    return _glob_regex(pattern).fullmatch(path) is not None


_GLOB_CACHE: dict[str, re.Pattern[str]] = {}


def _glob_regex(pattern: str) -> re.Pattern[str]:
    if pattern not in _GLOB_CACHE:
        out, i = [], 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
            elif pattern.startswith("**", i):
                out.append(".*")
                i += 2
            elif pattern[i] == "*":
                out.append("[^/]*")
                i += 1
            elif pattern[i] == "?":
                out.append("[^/]")
                i += 1
            else:
                out.append(re.escape(pattern[i]))
                i += 1
        _GLOB_CACHE[pattern] = re.compile("".join(out))
    return _GLOB_CACHE[pattern]


SYMLINK = "symlink"
HIDDEN = "hidden (names starting with '.' are not indexed)"
NOT_REGULAR = "not a regular file"
NOT_UTF8_NAME = "file name is not valid UTF-8"
_VCS_FOLDERS = {".git"}  # version control metadata, never documentation: not even reported


def check_pattern(pattern: str) -> str:
    """A glob or path rule must stay inside the docs root: relative, with no `..` part."""
    if pattern.startswith("/") or ".." in pattern.split("/") or "\\" in pattern:
        raise ValueError(f"pattern {pattern!r} must be a relative path inside the docs folder (no '/', '..' or '\\')")
    return pattern


def scan_folder(root: Path, include: Sequence[str], exclude: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Relative POSIX paths of the regular files under root in scope, and the (path, reason) of
    what is left out on purpose: symbolic links (never followed: a link could point at any file
    on the host), hidden files and folders (`.git` is left out silently), anything that is not a
    regular file (a FIFO is never opened: that would block) and folders that cannot be listed."""
    found: list[str] = []
    skipped: list[tuple[str, str]] = []

    def unlisted(exc: OSError) -> None:
        rel = Path(exc.filename).relative_to(root).as_posix()
        skipped.append((rel + "/", f"folder not readable: {exc.strerror}"))

    # followlinks=False: a linked folder is not entered
    for folder, subfolders, files in os.walk(root, onerror=unlisted):
        base = Path(folder)
        for name in sorted(subfolders):
            reason = _left_out(base / name)
            if reason is None:
                continue
            subfolders.remove(name)
            if name not in _VCS_FOLDERS:
                rel = (base / name).relative_to(root).as_posix()
                skipped.append((rel if reason == SYMLINK else rel + "/", reason))
        for name in files:
            rel = (base / name).relative_to(root).as_posix()
            if matches(rel, include, exclude):
                reason = _left_out(base / name, regular=True)
                if reason:
                    skipped.append((rel, reason))
                else:
                    found.append(rel)
    return sorted(found), sorted((shown_path(rel), reason) for rel, reason in skipped)


def not_utf8(rel: str) -> bool:
    """Whether a name os or git decoded with surrogate escapes (its bytes are not UTF-8): no
    index, link or Slack message can hold it, so it is skipped, shown as `shown_path` gives it."""
    return shown_path(rel) != rel


def shown_path(rel: str) -> str:
    """A path as text for a report: bytes that are not UTF-8 written as \\xNN."""
    return os.fsencode(rel).decode("utf-8", "backslashreplace")


def _left_out(path: Path, regular: bool = False) -> str | None:
    """Why a file or folder os.walk listed is not read or entered, or None; `lstat` only, so
    nothing is opened. `regular`: anything but a regular file is left out."""
    if not_utf8(path.name):
        return NOT_UTF8_NAME
    reason = too_long(path)
    if reason:
        return reason
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    if stat.S_ISLNK(mode):
        return SYMLINK
    if path.name.startswith("."):
        return HIDDEN
    return NOT_REGULAR if regular and not stat.S_ISREG(mode) else None


def too_long(path: Path) -> str | None:
    """Why the file system cannot hold `path` (a name over NAME_MAX or a path over PATH_MAX
    bytes; git can, so a checkout leaves such files out), or None."""
    if any(len(os.fsencode(part)) > NAME_MAX for part in path.parts):
        return f"file name too long (a part of the path is over {NAME_MAX} bytes)"
    if len(os.fsencode(path)) >= PATH_MAX:
        return f"path too long (over {PATH_MAX - 1} bytes)"
    return None


def in_scope(rel: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether a relative path is indexed: no hidden part, an include match and no exclude match."""
    if any(part.startswith(".") for part in rel.split("/")):
        return False
    return matches(rel, include, exclude)


def matches(rel: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """An include glob matches, no exclude glob does, and the file is a page of its format (not an
    Antora partial, say); hidden parts not considered."""
    return (any(glob_match(rel, p) for p in include) and not any(glob_match(rel, p) for p in exclude)
            and format_for(rel).is_page(rel))


# With several sources (DOCSBOT_SOURCES) a document's path is stored as `<source>:<path>`.
SOURCE_SEPARATOR = ":"


def source_of(doc_path: str) -> tuple[str, str]:
    """(source, path) of a stored document path; ("", path) in an index of one unnamed source."""
    name, sep, path = doc_path.partition(SOURCE_SEPARATOR)
    return (name, path) if sep and name and "/" not in name else ("", doc_path)


def sources_meta(meta: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each named source's own part of an index's metadata (`meta["sources"]`: its commit, its
    owners...; sync/source_index.py); empty in an index of one unnamed source."""
    value = meta.get("sources")
    return {str(k): dict(v) for k, v in value.items()} if isinstance(value, dict) else {}
