"""Where a document is published: its page on the docs site that a generator builds from the repository.

The entry points the indexer uses (and `SITE_LAYOUTS`, the values of DOCSBOT_SITE_LAYOUT).
`site_for` gives the site of a configured layout (`auto`: recognised by `detect_site`,
rag/site_detect.py, from the generator's own configuration files, read, never run), `page_url`
maps one source file to its page by that generator's documented rules (rag/site_urls.py, whose
docstring lists them) and `routing_front_matter` reads the front matter keys that move a page. A
file that is no page of the site gets no URL (""): its citation keeps the commit permalink only.
"""
from __future__ import annotations

import logging
import re
from functools import lru_cache
from pathlib import Path

from rag.formats.anchors import slugify
from rag.formats.model import Section
from rag.site_detect import detect_layout, detect_site, read_text
from rag.site_slugs import SLUGS
from rag.site_urls import LAYOUTS, ROUTING_KEYS, SiteInfo, default_site, page_url

__all__ = ["LAYOUTS", "ROUTING_KEYS", "SITE_LAYOUTS", "SiteInfo", "detect_layout", "detect_site", "page_url",
           "routing_front_matter", "site_anchor", "site_for"]

log = logging.getLogger(__name__)

SITE_LAYOUTS = ("auto", *LAYOUTS)


@lru_cache(maxsize=32)
def site_for(layout: str, docs_root: str) -> SiteInfo:
    """What the indexer uses: the detected site for `auto`, else the named layout with whatever its
    configuration file says (read once per process: a changed configuration needs a restart)."""
    if not docs_root:
        return SiteInfo() if layout == "auto" else default_site(layout, False)
    found = detect_site(Path(docs_root), None if layout == "auto" else layout)
    if layout == "auto" and not found.layout:
        log.warning("no docs site generator recognised at %s: citations link to the commit only "
                    "(set DOCSBOT_SITE_LAYOUT or DOCSBOT_SITE_URL_TEMPLATE)", docs_root)
    elif layout == "auto":
        log.info("docs site generator: %s, recognised from %s", found.layout, found.config or "its docs")
    root = Path(docs_root)
    return found if layout == "auto" or found.layout else default_site(layout, (root / "content").is_dir(),
                                                                       (root / "source").is_dir())


_FRONT = re.compile(r"\A(?:---[ \t]*\r?\n(.*?)\r?\n---|\+\+\+[ \t]*\r?\n(.*?)\r?\n\+\+\+)[ \t]*(?:\r?\n|\Z)", re.S)


def routing_front_matter(root: Path, rel_path: str) -> dict[str, str]:
    """The routing keys (slug, id, url) of a file's YAML or TOML front matter, read by a line
    pattern (top-level scalars only; nothing else of the file is parsed). Empty when the file
    cannot be read or lies outside `root`."""
    base = root.resolve()
    path = (base / rel_path).resolve()
    if not path.is_relative_to(base):
        return {}
    match = _FRONT.match(read_text(path) or "")
    if match is None:
        return {}
    block = match.group(1) if match.group(1) is not None else match.group(2)
    found = {}
    for key in ROUTING_KEYS:
        value = re.search(rf"^{key}\s*[:=][ \t]*(.*?)[ \t]*$", block, re.MULTILINE)
        if value is not None and value.group(1).strip("'\""):
            found[key] = value.group(1).strip("'\"")
    return found


def site_anchor(layout: str, sections: tuple[Section, ...], anchor: str) -> str:
    """The section's anchor on the generator's pages: an explicit id as written, else that
    generator's own slug of the heading (rag/site_slugs.py), deduped like the page does."""
    slug = SLUGS.get(layout)
    if slug is None or not anchor:
        return anchor
    seen: dict[str, int] = {}
    for section in sections:
        if not section.headings:
            continue
        heading = section.headings[-1]
        explicit = section.anchor != slugify(heading) and not re.fullmatch(
            rf"{re.escape(slugify(heading))}-\d+", section.anchor)
        base = section.anchor if explicit else slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        if section.anchor == anchor:
            return base if explicit or count == 0 else f"{base}-{count}"
    return anchor
