"""A link someone pastes, read back as the docs page it points to, with what a reader needs to
trust it (the bot's unfurls, bot/unfurls.py).

A link is one of the docs' pages when it is
* the page's address on the published site: what the index holds as its `page_url` (the site's
  URL rules, rag/site_urls.py), compared without its fragment or query, with or without a
  trailing `/` or `index.html`; or
* the file in the repository at any branch, tag or commit: the citation link pattern
  (DOCSBOT_LINK_TEMPLATE, e.g. `{repo_web}/blob/{commit}/{path}#{anchor}`) with any ref in place
  of `{commit}`, the path under DOCSBOT_REPO_SUBDIR.

`page_facts` reads the page at a level: a page above it is no page (None), like a missing one.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import unquote, urlsplit, urlunsplit

from rag.config import LinkConfig
from rag.freshness import Review, citation_warning, review_of
from rag.levels import Level
from rag.owners import Ownership
from rag.store import Index

_PLACEHOLDER = re.compile(r"\{(repo_web|commit|path|anchor)\}")


@dataclass(frozen=True)
class LinkedPage:
    doc_path: str
    anchor: str  # the section linked to ("" for the page)


@dataclass(frozen=True)
class PageFacts:
    doc_path: str
    title: str
    section: str  # the linked section's name ("" for the page itself)
    page_url: str  # on the published site ("" without one)
    commit: str
    commit_url: str  # the file at that commit ("" without a repository link)
    commit_date: str
    owners: tuple[str, ...]
    level: str
    review: Review | None  # None: no date known, or deprecated
    warning: str  # "⚠ deprecated", "⚠ last reviewed 14 months ago" (overdue), or ""


def site_pages_of(store: Index) -> dict[str, str]:
    """Each document's published page, normalized (`_normal`), to its path: from the index."""
    pages: dict[str, str] = {}
    for doc_path, (page_url,) in store.doc_columns("page_url").items():
        if page_url:
            pages[_normal(page_url)] = doc_path
    return pages


def linked_page(url: str, links: LinkConfig, site_pages: Mapping[str, str]) -> LinkedPage | None:
    """The page `url` points to, or None when it is no link to the docs."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("https", "http"):
        return None
    anchor = unquote(parts.fragment)
    if (doc := site_pages.get(_normal(url))) is not None:
        return LinkedPage(doc, anchor)
    found = _repository_file(urlunsplit(parts._replace(query="", fragment="")), links)
    return LinkedPage(found, anchor) if found else None


def _normal(url: str) -> str:
    """An address as pages are compared: no fragment or query, no `index.html`, no trailing `/`."""
    parts = urlsplit(url.strip())
    path = parts.path.removesuffix("index.html").rstrip("/")
    return urlunsplit((parts.scheme, parts.netloc.lower(), path, "", ""))


def _repository_file(url: str, links: LinkConfig) -> str:
    """The docs-root path of the repository file `url` names, at any ref; "" when it names none."""
    if not links.repo_web:
        return ""
    pattern = links.pattern.split("#", 1)[0]
    regex, last = "", 0
    for m in _PLACEHOLDER.finditer(pattern):
        regex += re.escape(pattern[last:m.start()])
        regex += {"repo_web": re.escape(links.repo_web.rstrip("/")), "commit": r"[^/]+", "path": r"(?P<path>.+)",
                  "anchor": ""}[m.group(1)]
        last = m.end()
    regex += re.escape(pattern[last:])
    match = re.fullmatch(regex, url)
    if match is None or "path" not in match.groupdict():
        return ""
    path = unquote(match.group("path"))
    subdir = links.repo_subdir.strip("/")
    if subdir:
        if not path.startswith(subdir + "/"):
            return ""
        path = path[len(subdir) + 1:]
    return "" if ".." in path.split("/") else path


async def page_facts(store: Index, linked: LinkedPage, level: Level, ownership: Ownership, review_days: int,
                     now: datetime) -> PageFacts | None:
    """What the index says of the linked page, read at `level`: None when no document there has
    that path (above the level, or not indexed)."""
    rows = [r for r in await store.doc_rows(linked.doc_path, int(level)) if r.get("doc_path") == linked.doc_path]
    if not rows:
        return None
    first = min(rows, key=lambda r: r.get("ordinal") or 0)
    section_row = next((r for r in rows if linked.anchor and r.get("anchor") == linked.anchor), None)
    row = section_row or first
    return PageFacts(
        doc_path=linked.doc_path, title=first.get("title") or linked.doc_path,
        section=(section_row.get("section") or "") if section_row else "",
        page_url=(row.get("page_url") or "").split("#")[0], commit=first.get("commit") or "",
        commit_url=(row.get("url") or "").split("#")[0], commit_date=first.get("commit_date") or "",
        owners=tuple(ownership.owners_for(linked.doc_path)), level=first.get("access") or "",
        review=review_of(first.get("reviewed") or "", first.get("commit_date") or "", first.get("review_days") or 0,
                         review_days, first.get("status") or ""),
        warning=citation_warning(first, review_days, now),
    )
