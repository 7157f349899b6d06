"""Reading documents: strict front matter, access level, per-file checks, then the format's parser.

A file that cannot be read cleanly (binary, oversized, not UTF-8, broken front matter, a Git LFS
pointer, a name too long for the file system, not a regular file, a parser that fails on it)
raises `DocumentError` with the reason; callers skip it and report path and reason, so nothing
half-parsed is ever indexed. The parser is the registry's for the file's suffix
(rag/formats/registry.py); it reads includes only through the `read` it is given, which resolves
inside the docs root.

A draft (`status: draft`) is skipped like such a file, with its reason, by `read_document` and
`load_folder` unless they are told to read drafts (DOCSBOT_INDEX_DRAFTS): `docsbot index` and
`docsbot sync` both read documents through them.
"""
from __future__ import annotations

import datetime
import errno
import hashlib
import os
import re
import stat
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import yaml

from rag.formats import Section, Source, format_for, markdown_of
from rag.formats.gitbook import nav_titles
from rag.formats.language import language_folders, variant
from rag.formats.model import ReadFile, TemplatePage
from rag.freshness import DEPRECATED, DRAFT, MAX_REVIEW_DAYS, STATUSES, period_days
from rag.levels import Level
from rag.paths import NOT_REGULAR, NOT_UTF8_NAME, SYMLINK, glob_match, not_utf8, scan_folder, too_long

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n(.*?)^(?:---|\.\.\.)[ \t]*$\n?", re.S | re.M)
_TEXT_FIELDS = ("title", "version", "area", "owner")
_SCALARS = (str, int, float, datetime.date)  # what a text field may be written as (`version: 2.3`)
_LFS_POINTER = b"version https://git-lfs.github.com/spec/v1"
DRAFT_SKIPPED = "draft (status: draft; set DOCSBOT_INDEX_DRAFTS=true to index drafts)"
NO_TEXT = "no text to index (the file is empty, or holds only a title or front matter)"

REASON_MAX = 200


def shorten(text: str, limit: int = REASON_MAX) -> str:
    """`text` cut to `limit` characters: a reason is one line in a report, not a dump of a value."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


class DocumentError(ValueError):
    """A file that is skipped, with the reason a person can act on (at most REASON_MAX characters)."""

    def __init__(self, reason: str) -> None:
        super().__init__(shorten(reason))


class _AliasRefused(yaml.MarkedYAMLError):
    """Front matter with an anchor (`&a`) or an alias (`*a`)."""


class _NoAliasLoader(yaml.SafeLoader):
    """The safe loader without anchors and aliases: a few hundred bytes of nested aliases expand
    to gigabytes (the "billion laughs"), and front matter has no use for them."""

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node | None:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _AliasRefused(problem="anchor or alias", problem_mark=event.start_mark)
        return super().compose_node(parent, index)


@dataclass(frozen=True)
class Document:
    path: str  # POSIX path relative to the docs root
    title: str
    version: str
    access: Level
    area: str
    owner: str
    content_hash: str  # sha256 of the normalised file text (and of the texts it includes)
    sections: tuple[Section, ...]  # what chunking reads; heading paths below the title
    includes: tuple[str, ...]  # docs-root-relative paths the parser pulled in
    format: str  # the registry's name of the parser: "markdown", "mdx", "text", ...
    # The language its path marks (`page.ja.md`, `i18n/ja/...`: rag/formats/language.py), "" for
    # the docs' default language, and the page it is a variant of (its path without the marker).
    language: str
    page: str
    # Freshness (rag/freshness.py): the last review as an ISO date ("" when none), the review
    # period in days (None: the configured default), and "" (current), "deprecated" or "draft".
    reviewed: str
    review_days: int | None
    status: str

    @property
    def body(self) -> str:
        """The sections as normalised Markdown (markdown_of), for readers of the whole text: made
        when asked, since a sync holds every document it reads (807 awsdocs pages: 24 MB with a
        stored copy, 10 MB of it this text)."""
        return markdown_of(self.sections)


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


def _front_matter(source: str) -> dict[object, object]:
    """The YAML of a front matter block as a mapping, or DocumentError (aliases refused)."""
    try:
        loaded = yaml.load(source, Loader=_NoAliasLoader)  # a SafeLoader: no Python objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark else ""
        if isinstance(exc, _AliasRefused):
            raise DocumentError(f"front matter uses a YAML anchor or alias{where} (not allowed)") from None
        raise DocumentError(f"front matter is not valid YAML{where}") from None
    except RecursionError:
        raise DocumentError("front matter is nested too deeply") from None
    except ValueError as exc:  # a date YAML recognises but the calendar has not (2025-13-01)
        raise DocumentError(f"front matter has an impossible date ({exc})") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, dict):
        raise DocumentError("front matter must be a mapping of keys to values")
    return loaded


def _text_field(meta: dict[object, object], key: str) -> str | None:
    """A front matter value that must be text; a number or date is taken as written."""
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, _SCALARS):
        raise DocumentError(f"front matter '{key}' must be text, not {_kind(value)}")
    return str(value).strip()


def _kind(value: object) -> str:
    """What a YAML value is, in the words of YAML."""
    kinds = {dict: "a mapping", list: "a list", bool: "true/false", type(None): "empty"}
    return kinds.get(type(value), type(value).__name__)


def _shown(value: object) -> str:
    """A front matter value in a reason: a scalar as written, anything else by its kind."""
    return repr(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else _kind(value)


def _reviewed(meta: dict[object, object]) -> str:
    """`last_reviewed` as an ISO date: a YAML date or timestamp, or text such as "2025-03-01"."""
    value = meta.get("last_reviewed")
    if value is None or value == "":
        return ""
    if isinstance(value, datetime.datetime):
        return value.date().isoformat()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str):
        try:
            return datetime.datetime.fromisoformat(value.strip()).date().isoformat()
        except ValueError:
            pass
    raise DocumentError(f"front matter 'last_reviewed' must be a date like 2025-03-01, not {_shown(value)}")


def _review_days(meta: dict[object, object]) -> int | None:
    """`review_in` in days: a number of days, or text such as "90d", "6 months", "1 year"."""
    value = meta.get("review_in")
    if value is None or value == "":
        return None
    days = value if isinstance(value, int) and not isinstance(value, bool) else (
        period_days(value) if isinstance(value, str) else None)
    if days is None or not 1 <= days <= MAX_REVIEW_DAYS:
        raise DocumentError("front matter 'review_in' must be a period like 90, 90d, 6 months or 1 year "
                            f"(at most {MAX_REVIEW_DAYS:,} days), not {_shown(value)}")
    return days


def _status(meta: dict[object, object]) -> str:
    """`status` (deprecated, draft) and `deprecated: true`, which says the same; "" for a current
    page. Any other status (`published`, `stable`, a docs team's own workflow words) is a current
    page: refusing it would drop every page of a repo that writes one."""
    status = (_text_field(meta, "status") or "").lower()
    if status not in STATUSES:
        status = ""
    deprecated = meta.get("deprecated")
    if deprecated is None:
        return status
    if not isinstance(deprecated, bool):
        raise DocumentError(f"front matter 'deprecated' must be true or false, not {_shown(deprecated)}")
    if status and (status == DEPRECATED) != deprecated:
        raise DocumentError(f"front matter 'deprecated: {str(deprecated).lower()}' contradicts 'status: {status}'")
    return DEPRECATED if deprecated else status


def parse_document(path: str, raw: bytes, rules: AccessRules, max_bytes: int, read: ReadFile | None = None,
                   folders: Collection[str] = (), nav_title: str = "") -> Document:
    """`read`: another file of the docs tree for an include, by docs-root-relative path (None:
    includes are left out, as without a docs root). `folders`: the tree's folders that mark a
    language (rag.formats.language.language_folders; none without a docs root). `nav_title`: the
    title the site's navigation gives the page (GitBook's SUMMARY.md), over its H1."""
    if raw.startswith(_LFS_POINTER):
        raise DocumentError("a Git LFS pointer, not the document: the sync does not fetch Git LFS content")
    text = decode_text(raw, max_bytes)
    meta: dict[object, object] = {}
    body = text
    if text.startswith("---"):
        match = _FRONT_MATTER.match(text)
        if not match:
            raise DocumentError("front matter has no closing '---' line")
        meta = _front_matter(match.group(1))
        body = text[match.end():]
    fields = {key: value for key in _TEXT_FIELDS if (value := _text_field(meta, key)) is not None}
    reviewed, review_days, status = _reviewed(meta), _review_days(meta), _status(meta)
    if "access" in meta:
        if not isinstance(meta["access"], str):
            raise DocumentError(f"front matter 'access' must be text, not {_kind(meta['access'])}")
        try:
            access = Level.parse(meta["access"])
        except ValueError as exc:
            raise DocumentError(f"front matter {exc}") from None
    else:
        access = rules.level_for(path)
    included: list[str] = []  # the texts the parser read, in order: part of the content hash

    def recorded(rel: str) -> str | None:
        found = read(rel) if read else None
        if found is not None:
            included.append(found)
        return found

    fmt = format_for(path)
    try:
        parsed = fmt.parse(Source(path, body, meta, recorded))
    except TemplatePage as exc:
        raise DocumentError(str(exc)) from None
    except Exception as exc:  # whatever a parser fails with skips this file, never the sync
        raise DocumentError(f"cannot be parsed as {fmt.name} ({type(exc).__name__})") from None
    label = meta.get("sidebar_label")
    title = (fields.get("title") or (label.strip() if isinstance(label, str) else "") or nav_title
             or parsed.title.strip()
             or Path(path).stem.replace("-", " ").replace("_", " "))
    sections = _below_title(parsed.sections, title)
    marked = variant(path, folders)
    return Document(
        path=path,
        title=title,
        version=fields.get("version", ""),
        access=access,
        area=fields.get("area", ""),
        owner=fields.get("owner", ""),
        content_hash=hashlib.sha256("\x00".join([text, *included]).encode()).hexdigest(),
        sections=sections,
        includes=parsed.includes,
        format=fmt.name,
        language=marked.language,
        page=marked.page,
        reviewed=reviewed,
        review_days=review_days,
        status=status,
    )


def _below_title(sections: tuple[Section, ...], title: str) -> tuple[Section, ...]:
    """The sections without the title in their heading paths: a page's first heading that repeats
    its title (`# Rollback Runbook` under `title: Rollback Runbook`) is the title, not a part."""
    folded = title.lower()
    return tuple(replace(s, headings=s.headings[1:]) if s.headings and s.headings[0].strip().lower() == folded else s
                 for s in sections)


def inside(root: Path, rel: str) -> Path:
    """root/rel with no part of it a symbolic link, no way out of root and a length the file
    system can hold, or DocumentError."""
    if any(part in ("", ".", "..") for part in rel.split("/")):
        raise DocumentError("path outside the docs folder")
    if not_utf8(rel):
        raise DocumentError(NOT_UTF8_NAME)
    reason = too_long(root / rel)
    if reason:
        raise DocumentError(reason)
    path = root
    for part in rel.split("/"):
        path = path / part
        try:
            if path.is_symlink():
                raise DocumentError(SYMLINK)
        except OSError as exc:
            raise DocumentError(f"unreadable: {exc.strerror}") from None
    return path


def read_document(root: Path, rel: str, rules: AccessRules, max_bytes: int,
                  folders: Collection[str] | None = None, drafts: bool = False) -> Document:
    """One file under root as a Document, or DocumentError (a huge file is never loaded, a
    symbolic link is never followed, a FIFO does not block the open). Its includes are read
    with the same checks. `folders`: root's language folders, when the caller has listed them.
    `drafts`: a draft is read too (else it is skipped, DRAFT_SKIPPED). A file with no text gives
    no chunk, so it is skipped too (NO_TEXT): every count of documents is of the index's."""
    doc = parse_document(rel, _read_file(root, rel, max_bytes), rules, max_bytes,
                         read=lambda other: _read_include(root, other, max_bytes),
                         folders=language_folders(root) if folders is None else folders,
                         nav_title=nav_titles(root).get(rel, ""))
    if doc.status == DRAFT and not drafts:
        raise DocumentError(DRAFT_SKIPPED)
    if not any(block.text.strip() for section in doc.sections for block in section.blocks):
        raise DocumentError(NO_TEXT)
    return doc


def _read_file(root: Path, rel: str, max_bytes: int) -> bytes:
    path = inside(root, rel)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise DocumentError(SYMLINK if exc.errno == errno.ELOOP else f"unreadable: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise DocumentError(NOT_REGULAR)
        if info.st_size > max_bytes:
            raise DocumentError(f"file too large ({info.st_size:,} bytes; limit {max_bytes:,})")
        try:
            return file.read(max_bytes + 1)
        except OSError as exc:
            raise DocumentError(f"unreadable: {exc.strerror}") from None


def _read_include(root: Path, rel: str, max_bytes: int) -> str | None:
    """The text of a file an include names, read like a document, or None."""
    try:
        return decode_text(_read_file(root, rel, max_bytes), max_bytes)
    except DocumentError:
        return None


def load_folder(
    root: Path, include: Sequence[str], exclude: Sequence[str], rules: AccessRules, max_bytes: int,
    drafts: bool = False,
) -> tuple[list[Document], list[tuple[str, str]]]:
    """All documents under root (drafts only with `drafts`), and the (path, reason) of each file skipped."""
    docs: list[Document] = []
    files, skipped = scan_folder(root, include, exclude)
    folders = language_folders(root)
    for rel in files:
        try:
            docs.append(read_document(root, rel, rules, max_bytes, folders, drafts))
        except DocumentError as exc:
            skipped.append((rel, str(exc)))
    return docs, skipped
