"""`docsbot doctor`'s check of the links to the published docs site (DOCSBOT_SITE_URL): "ok" only
when the layout fits the tree, and when the site answers, a handful of its pages open.

A layout fits when the tree's pages get URLs and none of them is a path no generator publishes
(`x.html.html`, `x.html/`, a source extension such as `.md` or `.erb`, the `source/` folder of a
Middleman site); each misfit is a warning naming the fix (the layout `auto` recognises, when it
differs). Then up to SAMPLE page URLs are asked for with HEAD (GET where HEAD is refused), TIMEOUT_S
each; the ones that answer neither 2xx nor 3xx are listed. A site that cannot be reached from
here (no network, a private host) is said so, not counted as broken.
"""
from __future__ import annotations

import re
import urllib.error
import urllib.request
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from commands.doctor_finding import Finding
from foundation.links import site_of
from rag.paths import scan_folder
from rag.site import detect_site, page_url, routing_front_matter, site_for

if TYPE_CHECKING:
    from foundation.settings import Settings

SAMPLE = 5
TIMEOUT_S = 2.0
_IMPOSSIBLE = re.compile(r"\.html\.html|\.html/|\.(?:md|markdown|mdx|erb|rst|adoc)(?:/|$)")
_CHECK = "site links"


def site_checks(settings: Settings) -> list[Finding]:
    site_url, layout, root = site_of(settings)
    if not site_url:
        return []
    if not root or not Path(root).is_dir():
        return [Finding(_CHECK, "warning", f"the docs folder {root or '(unknown)'} is not here: page links not checked",
                        "run `docsbot sync` first, or set DOCSBOT_DOCS_DIR")]
    info = site_for(layout, root)
    detected = detect_site(Path(root)).layout
    better = f"set DOCSBOT_SITE_LAYOUT={detected}" if detected and detected != info.layout else (
        "set DOCSBOT_SITE_LAYOUT to the generator that builds the site, or DOCSBOT_SITE_URL_TEMPLATE")
    templated = "{path}" in site_url  # DOCSBOT_SITE_URL_TEMPLATE: the rule stated outright
    if not info.layout and not templated:
        return [Finding(_CHECK, "warning", f"no docs site generator recognised under {root}: citations link to "
                        "the commit only", better)]
    files, _ = scan_folder(Path(root), settings.include, settings.exclude)
    urls = {rel: page_url(info.layout, site_url, rel, routing_front_matter(Path(root), rel), "", info)
            for rel in files}
    pages = {rel: url for rel, url in urls.items() if url}
    found_in = (" (DOCSBOT_SITE_URL_TEMPLATE)" if templated
                else f" (recognised from {info.config})" if info.config else "")
    if not pages:
        return [Finding(_CHECK, "warning", f"none of the {len(files)} documents is a page of a {info.layout} "
                        f"site{found_in}: citations link to the commit only", better)]
    wrong = [url for url in pages.values() if _IMPOSSIBLE.search(urlsplit(url).path)
             or (not info.source and (Path(root) / "source").is_dir()
                 and urlsplit(url).path.removeprefix(urlsplit(site_url).path).lstrip("/").startswith("source/"))]
    if wrong:
        return [Finding(_CHECK, "warning", f"{len(wrong)} of {len(pages)} page links are paths no site publishes, "
                        f"e.g. {wrong[0]}", better)]
    detail = f"{len(pages)} of {len(files)} documents link to {info.layout or 'site'} pages{found_in}"
    return [_opened(list(pages.values()), detail)]


def _opened(urls: list[str], detail: str) -> Finding:
    """The finding after asking for up to SAMPLE of the page URLs, spread over the list."""
    step = max(1, len(urls) // SAMPLE)
    sample = urls[::step][:SAMPLE]
    answers = {url: _status(url) for url in sample}
    reached = {url: code for url, code in answers.items() if code is not None}
    if not reached:
        return Finding(_CHECK, "ok", f"{detail}; the site is not reachable from here, no page was opened")
    broken = [f"{url} ({code})" for url, code in reached.items() if not 200 <= code < 400]
    if broken:
        return Finding(_CHECK, "warning", f"{detail}, but {len(broken)} of {len(reached)} pages opened did not "
                       f"answer: {', '.join(broken)}",
                       "check DOCSBOT_SITE_URL and DOCSBOT_SITE_LAYOUT against the published site's addresses")
    return Finding(_CHECK, "ok", f"{detail}; {len(reached)} of them opened")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # a 3xx answers: the page exists somewhere


_OPENER = urllib.request.build_opener(_NoRedirect)


def _status(url: str) -> int | None:
    """The HTTP status of a HEAD (a GET when HEAD is refused), None when nothing answered."""
    for method in ("HEAD", "GET"):
        try:
            with _OPENER.open(urllib.request.Request(url, method=method), timeout=TIMEOUT_S) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            if exc.code in (405, 501) and method == "HEAD":
                continue
            return int(exc.code)
        except (urllib.error.URLError, OSError, ValueError):
            return None
    return None
