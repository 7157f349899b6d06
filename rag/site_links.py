"""Where a link in a quoted passage goes, for the renderer (rag/slack_text.to_mrkdwn): the page
the docs' author meant, resolved against the document the passage was quoted from (the citation
`[n]` that follows it in the answer).

* an in-page anchor (`#setup`) is that section of the cited page: its published page when the
  citation has one, else the file at the cited commit;
* a link to another document of the docs (`../guide/x.md`, `x.md#a`) is that document's
  published page (by the site's URL rules, `pages`, or a cited document's own page), else the
  file at the same commit;
* a site path (`/guide/x.html`) is that path on the published site; without a site it has no link.

Nothing else: a link whose document cannot be placed keeps its text only ("", as before).
"""
from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, unquote, urljoin, urlsplit, urlunsplit

from rag.answer import Citation
from rag.config import LinkConfig
from rag.site import page_url, routing_front_matter, site_for

# A docs-root-relative path -> its published page ("" when it is no page of the site).
Pages = Callable[[str], str]


@dataclass(frozen=True)
class AnswerLinks:
    """The link rules of one answer: its citations, and the site's URL rules when known."""

    citations: Sequence[Citation]
    pages: Pages | None = None

    def __call__(self, target: str, n: int | None) -> str:
        """The URL of `target` written in the passage of citation `n` (None: the answer's first), or ""."""
        source = next((c for c in self.citations if c.n == n), self.citations[0] if self.citations else None)
        if source is None or "://" in target or target.startswith(("mailto:", "//")):
            return ""
        path, _, anchor = target.partition("#")
        if not path:
            return _with_fragment(source.page_url or source.url, anchor)
        if path.startswith("/"):
            return _with_fragment(urljoin(source.page_url, path), anchor) if source.page_url else ""
        doc = posixpath.normpath(posixpath.join(posixpath.dirname(source.doc_path), unquote(path)))
        if doc.startswith("../"):
            return ""  # outside the docs
        cited = next((c for c in self.citations if c.doc_path == doc), None)
        if cited is not None:
            return _with_fragment(cited.page_url or cited.url, anchor)
        page = self.pages(doc) if self.pages is not None and _is_source(doc) else ""
        if page:
            return _with_fragment(page, anchor)
        if source.page_url and not _is_source(doc):  # a link the site serves (`x.html`, `x/`)
            return _with_fragment(urljoin(source.page_url, path), anchor)
        return _with_fragment(_at_commit(source, doc), anchor)


def site_pages(links: LinkConfig) -> Pages | None:
    """The site's URL rules (rag/site.py) for these link settings, when a site is configured and
    its docs folder is on this host (the rules read the generator's configuration there)."""
    if not links.site_url or not links.site_root or not Path(links.site_root).is_dir():
        return None
    info = site_for(links.site_layout, links.site_root)

    def page(doc: str) -> str:
        front = routing_front_matter(Path(links.site_root), doc)
        return page_url(info.layout, links.site_url, doc, front, "", info)

    return page


_SOURCE_SUFFIXES = (".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".erb")


def _is_source(doc: str) -> bool:
    return doc.lower().endswith(_SOURCE_SUFFIXES)


def _with_fragment(url: str, anchor: str) -> str:
    if not url.startswith(("https://", "http://")):
        return ""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(fragment=quote(anchor, safe="-_.~:") if anchor else ""))


def _at_commit(source: Citation, doc: str) -> str:
    """The file `doc` at the cited commit: the citation's permalink with its path swapped."""
    url = urlsplit(source.url)
    own = quote(source.doc_path, safe="/")
    if not url.scheme or not url.path.endswith(own):
        return ""
    return urlunsplit(url._replace(path=url.path[: len(url.path) - len(own)] + quote(doc, safe="/"), fragment=""))
