"""Reading Markdown documents: strict front matter, access level, and per-file checks.

A file that cannot be read cleanly (binary, oversized, not UTF-8, broken front matter) raises
`DocumentError` with the reason; callers skip it and report path and reason, so nothing
half-parsed is ever indexed.
"""
from __future__ import annotations

import errno
import hashlib
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import yaml

from rag.levels import Level

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*$\n?", re.S | re.M)
_H1 = re.compile(r"^#[ \t]+(.+?)[ \t#]*$", re.M)
_TEXT_FIELDS = ("title", "version", "area", "owner")


class DocumentError(ValueError):
    """A file that is skipped, with the reason a person can act on."""


@dataclass(frozen=True)
class Document:
    path: str  # POSIX path relative to the docs root
    title: str
    version: str
    access: Level
    area: str
    owner: str
    body: str  # Markdown without the front matter, LF line endings
    content_hash: str  # sha256 of the normalised file text


@dataclass(frozen=True)
class AccessRules:
    """Where a document's level comes from when its front matter has none."""

    path_levels: dict[str, Level]
    default: Level = Level.restricted

    def level_for(self, path: str) -> Level:
        for pattern, level in self.path_levels.items():
            if glob_match(path, pattern):
                return level
        return self.default


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


def decode_text(raw: bytes, max_bytes: int) -> str:
    """Bytes to normalised text (BOM dropped, CRLF/CR to LF), or DocumentError."""
    if len(raw) > max_bytes:
        raise DocumentError(f"file too large ({len(raw):,} bytes; limit {max_bytes:,})")
    if b"\x00" in raw[:8192]:
        raise DocumentError("binary file")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"not UTF-8 text (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_document(path: str, raw: bytes, rules: AccessRules, max_bytes: int) -> Document:
    text = decode_text(raw, max_bytes)
    meta: dict[str, object] = {}
    body = text
    if text.startswith("---"):
        match = _FRONT_MATTER.match(text)
        if not match:
            raise DocumentError("front matter has no closing '---' line")
        try:
            loaded = yaml.safe_load(match.group(1))
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 2}" if mark else ""
            raise DocumentError(f"front matter is not valid YAML{where}") from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise DocumentError("front matter must be a mapping of keys to values")
        meta = loaded
        body = text[match.end():]
    fields: dict[str, str] = {}
    for key in _TEXT_FIELDS:
        value = meta.get(key)
        if value is None:
            continue
        if isinstance(value, (dict, list, bool)):
            raise DocumentError(f"front matter '{key}' must be text, not {type(value).__name__}")
        fields[key] = str(value).strip()
    if "access" in meta:
        try:
            access = Level.parse(str(meta["access"]))
        except ValueError as exc:
            raise DocumentError(f"front matter {exc}") from None
    else:
        access = rules.level_for(path)
    title = fields.get("title") or _first_h1(body) or Path(path).stem.replace("-", " ").replace("_", " ")
    return Document(
        path=path,
        title=title,
        version=fields.get("version", ""),
        access=access,
        area=fields.get("area", ""),
        owner=fields.get("owner", ""),
        body=body,
        content_hash=hashlib.sha256(text.encode()).hexdigest(),
    )


def _first_h1(body: str) -> str:
    match = _H1.search(body)
    return match.group(1).strip() if match else ""


SYMLINK = "symlink"
HIDDEN = "hidden (names starting with '.' are not indexed)"
_VCS_FOLDERS = {".git"}  # version control metadata, never documentation: not even reported


def check_pattern(pattern: str) -> str:
    """A glob or path rule must stay inside the docs root: relative, with no `..` part."""
    if pattern.startswith("/") or ".." in pattern.split("/") or "\\" in pattern:
        raise ValueError(f"pattern {pattern!r} must be a relative path inside the docs folder (no '/', '..' or '\\')")
    return pattern


def scan_folder(root: Path, include: list[str], exclude: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """Relative POSIX paths of the regular files under root in scope, and the (path, reason) of
    what is left out on purpose: symbolic links (never followed: a link could point at any file
    on the host) and hidden files and folders (`.git` is left out silently)."""
    found: list[str] = []
    skipped: list[tuple[str, str]] = []
    for folder, subfolders, files in os.walk(root):  # followlinks=False: a linked folder is not entered
        base = Path(folder)
        for name in sorted(subfolders):
            path = base / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                skipped.append((rel, SYMLINK))
            elif name.startswith("."):
                if name not in _VCS_FOLDERS:
                    skipped.append((rel + "/", HIDDEN))
            else:
                continue
            subfolders.remove(name)
        for name in files:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if not matches(rel, include, exclude):
                continue
            if path.is_symlink():
                skipped.append((rel, SYMLINK))
            elif name.startswith("."):
                skipped.append((rel, HIDDEN))
            elif path.is_file():
                found.append(rel)
    return sorted(found), sorted(skipped)


def in_scope(rel: str, include: list[str], exclude: list[str]) -> bool:
    """Whether a relative path is indexed: no hidden part, an include match and no exclude match."""
    if any(part.startswith(".") for part in rel.split("/")):
        return False
    return matches(rel, include, exclude)


def matches(rel: str, include: list[str], exclude: list[str]) -> bool:
    """An include glob matches and no exclude glob does (hidden parts not considered)."""
    return any(glob_match(rel, p) for p in include) and not any(glob_match(rel, p) for p in exclude)


def inside(root: Path, rel: str) -> Path:
    """root/rel with no part of it a symbolic link and no way out of root, or DocumentError."""
    path = root
    for part in rel.split("/"):
        if part in ("", ".", ".."):
            raise DocumentError("path outside the docs folder")
        path = path / part
        if path.is_symlink():
            raise DocumentError(SYMLINK)
    return path


def read_document(root: Path, rel: str, rules: AccessRules, max_bytes: int) -> Document:
    """One file under root as a Document, or DocumentError (a huge file is never loaded, a
    symbolic link is never followed)."""
    path = inside(root, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise DocumentError(SYMLINK if exc.errno == errno.ELOOP else f"unreadable: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError("not a regular file")
        if info.st_size > max_bytes:
            raise DocumentError(f"file too large ({info.st_size:,} bytes; limit {max_bytes:,})")
        try:
            raw = file.read(max_bytes + 1)
        except OSError as exc:
            raise DocumentError(f"unreadable: {exc.strerror}") from None
    return parse_document(rel, raw, rules, max_bytes)


def load_folder(
    root: Path, include: list[str], exclude: list[str], rules: AccessRules, max_bytes: int
) -> tuple[list[Document], list[tuple[str, str]]]:
    """All documents under root, and the (path, reason) of each file skipped."""
    docs: list[Document] = []
    files, skipped = scan_folder(root, include, exclude)
    for rel in files:
        try:
            docs.append(read_document(root, rel, rules, max_bytes))
        except DocumentError as exc:
            skipped.append((rel, str(exc)))
    return docs, skipped
