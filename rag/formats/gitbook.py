"""GitBook's table of contents: SUMMARY.md says which files are pages and gives each its title.

The title a reader sees in GitBook's navigation and on the page is the SUMMARY.md entry's text
(`* [Community & getting help](community.md)`), which often differs from the file's H1
(`# Community`): the entry's text is the page's title. SUMMARY.md is read where GitBook reads it:
in the folder `.gitbook.yaml`'s `root:` names, else in the docs root. Its paths are relative to
that folder; the titles are keyed by docs-root-relative path.
"""
from __future__ import annotations

import posixpath
import re
from functools import lru_cache
from pathlib import Path

_ROOT = re.compile(r"^root:[ \t]*['\"]?([^'\"#\n]+?)['\"]?[ \t]*$", re.M)
_ENTRY = re.compile(r"^[ \t]*[*+-][ \t]+\[((?:[^\[\]\\]|\\.)+)\]\(<?([^)>#\s]+)>?(?:#[^)]*)?\)", re.M)
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|&])")
_MAX_BYTES = 1_000_000


def nav_titles(root: Path) -> dict[str, str]:
    """{docs-root-relative path: its SUMMARY.md title} of the GitBook tree at `root`; empty when
    there is no SUMMARY.md (not a GitBook tree). Read again only when SUMMARY.md changed."""
    source = _source(root)
    summary = source / "SUMMARY.md"
    try:
        stat = summary.stat()
    except OSError:
        return {}
    prefix = "" if source == root else source.relative_to(root).as_posix()
    return dict(_titles(str(summary), prefix, stat.st_mtime_ns, stat.st_size))


def _source(root: Path) -> Path:
    """The folder GitBook reads: `.gitbook.yaml`'s `root:` when it stays inside `root`."""
    try:
        config = (root / ".gitbook.yaml").read_text(encoding="utf-8", errors="replace")[:_MAX_BYTES]
    except OSError:
        return root
    found = _ROOT.search(config)
    if found is None:
        return root
    source = (root / found.group(1).strip()).resolve()
    return source if source.is_relative_to(root.resolve()) and source.is_dir() else root


@lru_cache(maxsize=8)
def _titles(summary: str, prefix: str, _mtime_ns: int, _size: int) -> tuple[tuple[str, str], ...]:
    try:
        with open(summary, encoding="utf-8", errors="replace") as handle:
            text = handle.read(_MAX_BYTES)
    except OSError:
        return ()
    found: dict[str, str] = {}
    for title, link in _ENTRY.findall(text):
        if "://" in link or not link.lower().endswith((".md", ".markdown")):
            continue
        path = posixpath.normpath(posixpath.join(prefix, _ESCAPE.sub(r"\1", link)))
        shown = " ".join(_ESCAPE.sub(r"\1", title).split())
        if shown and not path.startswith("../"):
            found.setdefault(path, shown)
    return tuple(found.items())
