"""Each docs site generator's page-URL rules: where a source file is published on the site.

Pure functions of a path, its front matter and the `SiteInfo` a generator's configuration gave
(rag/site_detect.py reads it). `page_url` maps one source file to its page by that generator's
documented rules:

- mkdocs: `a/b.md` -> `a/b/` (`use_directory_urls`, the default), `a/b.html` without; `index.md`
  and `README.md` -> the folder. Paths are relative to `docs_dir` (default `docs`).
- docusaurus: `<routeBasePath>/<slug>` (routeBasePath default `docs`); the slug is the `slug` front
  matter (absolute `/x`, or relative to the file's folder), else the folder plus the `id` front
  matter or the file name; number prefixes (`01-intro`) are stripped; `index`, `README` or a file
  named like its folder -> the folder; files and folders starting with `_` are no pages.
- nextra: the path without its extension, `index` -> the folder (under `pages/` or `content/`).
- nextjs (a Next.js site that renders `content/**/*.md` itself, e.g. handbook.sourcegraph.com):
  `content/a/b.md` -> `a/b`, `content/a/index.md` -> `a`, with `/` after it when next.config sets
  `trailingSlash: true`; names starting with `_` are no pages.
- sphinx: `a/b.rst` -> `a/b.html` (`index.rst` -> `index.html`). sphinx-dirhtml: `a/b.rst` ->
  `a/b/`, `index.rst` -> the folder. conf.py does not say which builder publishes the site, so a
  Sphinx tree is `sphinx` unless a Read the Docs config beside it says `builder: dirhtml`.
- antora: `modules/<module>/pages/<page>.adoc` -> `<component>/<version>/<module>/<page>.html`, the
  `ROOT` module left out, component and version from antora.yml (an unversioned `~`, or `true`,
  whose version comes from the branch, is left out). antora-indexify: `<page>/` instead of
  `<page>.html` (the playbook's `html_extension_style: indexify`, e.g. docs.asciidoctor.org).
  When the base URL already names the component (`https://docs.asciidoctor.org/pdf-converter/latest/`)
  it is the component version's root and only `<module>/<page>` is added: that is how a renamed
  version segment such as `latest`, which only the site's playbook knows, is given.
- hugo: the path below `content/` (contentDir), lower-cased: `a/b.md` -> `a/b/`, `_index.md` and a
  bundle's `index.md` -> the folder; `slug` front matter replaces the file name, `url` the whole path.
- middleman (GOV.UK tech-docs-template): `source/a/b.html.md.erb` (or `.html.md`) -> `a/b.html`,
  the template extensions dropped and `.html` kept; `source/index.html.md.erb` -> the site root;
  names starting with `_` and `layouts/` are no pages.
- jekyll: a `permalink:` front matter wins; else a collection's permalink from `_config.yml`
  (`_docs/a/b.md` with `/:collection/:path/` -> `docs/a/b/`; posts `_posts/2025-01-29-x.md` with
  `/news/:year/:month/:day/:title/` -> `news/2025/01/29/x/`; Jekyll's defaults `/:collection/:path.html`
  and `/:year/:month/:day/:title.html`); any other page `a/b.md` -> `a/b.html`, `index.md` -> the
  folder. Other `_` folders (`_data`, `_includes`, `_layouts`) and `exclude:` paths are no pages.
- vitepress: `a/b.md` -> `a/b` with `cleanUrls: true`, else `a/b.html`; `index.md` -> the folder.
- gitbook: `a/b.md` -> `a/b`, a folder's `README.md` -> the folder (`a`), the root one -> the site
  root; when SUMMARY.md was read, only the pages it lists (SUMMARY.md itself is none).

A file that is no page of the site (outside the generator's source folder, a partial, another
extension) gets no URL (""): its citation keeps the commit permalink only. A base URL holding
`{path}` is DOCSBOT_SITE_URL_TEMPLATE, the rule stated outright: it is filled in whatever the layout.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Callable, Mapping
from urllib.parse import quote, urlsplit

LAYOUTS = ("mkdocs", "docusaurus", "nextra", "nextjs", "sphinx", "sphinx-dirhtml", "antora", "antora-indexify", "hugo",
           "middleman", "jekyll", "vitepress", "gitbook")
# Front matter keys that move a page (Docusaurus slug/id, Hugo slug/url, Jekyll permalink); nothing else is read.
ROUTING_KEYS = ("slug", "id", "url", "permalink")


@dataclass(frozen=True)
class SiteInfo:
    """What a generator's configuration says about URLs, and where its sources are."""

    layout: str = ""  # "" when nothing was recognised
    # The generator's source folder as seen from the docs root: `source` is a folder inside the
    # docs root holding it (paths outside it are no pages), `within` the docs root's own path
    # inside it (prefixed to every path). Both "" when the docs root is the source folder.
    source: str = ""
    within: str = ""
    directory_urls: bool = True  # mkdocs use_directory_urls
    route_base: str = "docs"  # docusaurus routeBasePath
    component: str = ""  # antora
    version: str = ""  # antora; "" for an unversioned component
    # jekyll: (collection, permalink pattern) from _config.yml, ("posts", ...) included; the
    # paths its `exclude:` names
    collections: tuple[tuple[str, str], ...] = ()
    excluded: tuple[str, ...] = ()
    clean_urls: bool = False  # vitepress cleanUrls
    trailing_slash: bool = False  # nextjs trailingSlash
    pages: frozenset[str] | None = None  # gitbook: the paths SUMMARY.md lists (None: no SUMMARY.md read)
    # the configuration file the generator was recognised from ("" when none): said, not compared
    config: str = field(default="", compare=False)


def page_url(
    layout: str, base: str, rel_path: str, front_matter: Mapping[str, object] | None = None, anchor: str = "",
    site_info: SiteInfo | None = None,
) -> str:
    """The published page of the docs-root-relative `rel_path` (with `#anchor` when given), or ""
    when there is no base URL, no such layout or the file is no page of the site."""
    router = _ROUTERS.get(layout)
    if "{path}" in base:
        return _templated(base, rel_path, anchor, site_info or SiteInfo())
    if not base or router is None:
        return ""
    info = site_info or default_site(layout, rel_path.startswith("content/"), rel_path.startswith("source/"))
    path = _source_path(rel_path, info)
    if path is None:
        return ""
    route = router(PurePosixPath(path), _routing(front_matter), info)
    if route is None:
        return ""
    url = base.rstrip("/") + "/" + quote(_component_prefix(layout, base, info) + route, safe="/")
    return f"{url}#{anchor}" if anchor else url


_SOURCE_SUFFIXES = (".erb", ".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".txt", ".html")


def _templated(template: str, rel_path: str, anchor: str, info: SiteInfo) -> str:
    """DOCSBOT_SITE_URL_TEMPLATE filled in: {path} the path below the source folder without its
    source and template extensions (`source/x/y.html.md.erb` -> `x/y`), {anchor} the anchor (a
    `#` left with nothing after it is dropped)."""
    path = _source_path(rel_path, info)
    if path is None:
        return ""
    while (suffix := PurePosixPath(path).suffix.lower()) in _SOURCE_SUFFIXES and suffix:
        path = path[: -len(suffix)]
    url = template.format(path=quote(path, safe="/"), anchor=quote(anchor, safe=""))
    return url[:-1] if url.endswith("#") else url


def _routing(front_matter: Mapping[str, object] | None) -> dict[str, str]:
    """The routing keys of a front matter that are text (a YAML number is taken as written)."""
    values = {}
    for key in ROUTING_KEYS:
        value = (front_matter or {}).get(key)
        if isinstance(value, (str, int, float)) and not isinstance(value, bool) and str(value).strip():
            values[key] = str(value).strip()
    return values


def default_site(layout: str, has_content: bool, has_source: bool = False) -> SiteInfo:
    """A layout's site when no configuration file was read: Hugo's sources in `content/` and
    Middleman's in `source/` when there is one, everything else at the docs root."""
    if layout == "middleman":
        return SiteInfo(layout, source="source" if has_source else "")
    return SiteInfo(layout, source="content" if layout == "hugo" and has_content else "")


def _source_path(rel_path: str, info: SiteInfo) -> str | None:
    """`rel_path` relative to the generator's source folder, or None when it lies outside it."""
    path = rel_path.strip("/")
    source = info.source.strip("/")
    if source:
        if not path.startswith(source + "/"):
            return None
        path = path[len(source) + 1:]
    return f"{info.within.strip('/')}/{path}" if info.within.strip("/") else path


def _folder(path: PurePosixPath) -> str:
    """The URL of the folder holding `path`: "a/b/", or "" for the site root."""
    parent = path.parent.as_posix()
    return "" if parent == "." else parent + "/"


def _mkdocs(path: PurePosixPath, _: dict[str, str], info: SiteInfo) -> str | None:
    if path.suffix.lower() not in (".md", ".markdown", ".mdown", ".mkdn", ".mkd"):
        return None
    index = path.stem == "index" or path.stem.lower() == "readme"
    if info.directory_urls:
        return _folder(path) if index else f"{_folder(path)}{path.stem}/"
    return f"{_folder(path)}{'index' if index else path.stem}.html"


def _sphinx(path: PurePosixPath, _: dict[str, str], __: SiteInfo) -> str | None:
    return f"{_folder(path)}{path.stem}.html"


def _sphinx_dirhtml(path: PurePosixPath, _: dict[str, str], __: SiteInfo) -> str | None:
    return _folder(path) if path.stem == "index" else f"{_folder(path)}{path.stem}/"


def _nextra(path: PurePosixPath, _: dict[str, str], __: SiteInfo) -> str | None:
    if path.suffix.lower() not in (".md", ".mdx") or any(part.startswith("_") for part in path.parts):
        return None
    return _folder(path).rstrip("/") if path.stem == "index" else f"{_folder(path)}{path.stem}"


def _nextjs(path: PurePosixPath, front: dict[str, str], info: SiteInfo) -> str | None:
    route = _nextra(path, front, info)
    return route + "/" if route and info.trailing_slash else route


# Docusaurus' DefaultNumberPrefixParser: `01-intro`, `1.intro`, `2_x`, but not a date or version.
_NUMBER_PREFIX = re.compile(r"^\d+\s*[-_.]+\s*(?=[^-_.\s])")
_NOT_A_PREFIX = re.compile(r"^\d+[-_.]\d+(?:$|[-_.])")


def _unprefixed(name: str) -> str:
    return name if _NOT_A_PREFIX.match(name) else _NUMBER_PREFIX.sub("", name)


def _docusaurus(path: PurePosixPath, front: dict[str, str], info: SiteInfo) -> str | None:
    if path.suffix.lower() not in (".md", ".mdx") or any(part.startswith("_") for part in path.parts):
        return None
    folders = [_unprefixed(part) for part in path.parent.parts]
    folder = "/" + "".join(f"{part}/" for part in folders)
    slug = front.get("slug")
    if slug is None:
        name = _unprefixed(path.stem)
        closest = path.parent.name
        if name.lower() in ("index", "readme") or (closest and path.stem.lower() == closest.lower()):
            slug = folder
        else:
            slug = folder + front.get("id", name)
    elif not slug.startswith("/"):
        slug = folder + slug  # relative to the file's folder
    return _join(info.route_base, slug)


def _antora(path: PurePosixPath, _: dict[str, str], info: SiteInfo, indexify: bool = False) -> str | None:
    parts = path.parts
    if len(parts) < 4 or parts[0] != "modules" or parts[2] != "pages" or path.suffix.lower() != ".adoc":
        return None
    module = "" if parts[1] == "ROOT" else parts[1] + "/"
    page = PurePosixPath(*parts[3:])
    if indexify:
        return module + (_folder(page) if page.stem == "index" else f"{_folder(page)}{page.stem}/")
    return f"{module}{_folder(page)}{page.stem}.html"


def _hugo(path: PurePosixPath, front: dict[str, str], __: SiteInfo) -> str | None:
    if "url" in front:
        return front["url"].lstrip("/")
    folder = _folder(path).lower().replace(" ", "-")
    if path.stem in ("_index", "index"):
        return folder
    return f"{folder}{front.get('slug', path.stem.lower().replace(' ', '-'))}/"


def _join(*parts: str) -> str:
    """URL path parts joined by single slashes, a trailing slash kept, no leading one."""
    inner = "/".join(part.strip("/") for part in parts if part.strip("/"))
    return inner + "/" if inner and parts[-1].endswith("/") else inner


def _component_prefix(layout: str, base: str, info: SiteInfo) -> str:
    """`<component>/<version>/` for an Antora page when the base URL is the site's root (it does
    not name the component already)."""
    if not layout.startswith("antora") or not info.component:
        return ""
    if info.component in urlsplit(base).path.split("/"):
        return ""
    return _join(info.component, info.version, "/")


def _middleman(path: PurePosixPath, _: dict[str, str], __: SiteInfo) -> str | None:
    name = path.name.lower()
    if name.startswith("_") or "layouts" in path.parts[:-1] or not name.endswith((".md", ".md.erb", ".markdown")):
        return None
    stem = re.sub(r"(?:\.md|\.markdown)(?:\.erb)?$", "", path.name, flags=re.I)
    page = stem if stem.lower().endswith(".html") else stem + ".html"
    return "" if page == "index.html" and not _folder(path) else _folder(path) + page


_POST = re.compile(r"^(\d{4})-(\d{2})-(\d{2})-(.+)$")


def _jekyll(path: PurePosixPath, front: dict[str, str], info: SiteInfo) -> str | None:
    rel = path.as_posix()
    if any(rel == x.strip("/") or rel.startswith(x.strip("/") + "/") for x in info.excluded if x.strip("/")):
        return None
    if path.suffix.lower() not in (".md", ".markdown", ".html"):
        return None
    if (permalink := front.get("permalink", "")) and ":" not in permalink:
        return permalink.lstrip("/")
    first = path.parts[0]
    if not first.startswith("_"):
        if any(part.startswith("_") for part in path.parts):
            return None
        return _folder(path) if path.stem == "index" else f"{_folder(path)}{path.stem}.html"
    collection = first[1:]
    patterns = dict(info.collections)
    if collection not in patterns:
        return None
    inner = PurePosixPath(*path.parts[1:])
    values = {"collection": collection, "path": inner.with_suffix("").as_posix(), "name": inner.stem,
              "title": inner.stem, "output_ext": ".html", "categories": ""}
    if collection == "posts":
        post = _POST.match(inner.stem)
        if post is None:
            return None
        values.update(year=post.group(1), month=post.group(2), day=post.group(3), title=post.group(4))
    default = "/:year/:month/:day/:title:output_ext" if collection == "posts" else "/:collection/:path:output_ext"
    url = re.sub(r":(\w+)", lambda m: values.get(m.group(1), ""), patterns[collection] or default)
    return re.sub(r"/{2,}", "/", url).lstrip("/").replace("/index/", "/")


def _vitepress(path: PurePosixPath, _: dict[str, str], info: SiteInfo) -> str | None:
    if path.suffix.lower() != ".md" or any(part.startswith((".", "_")) for part in path.parts):
        return None
    if path.stem == "index":
        return _folder(path)
    return f"{_folder(path)}{path.stem}" + ("" if info.clean_urls else ".html")


def _gitbook(path: PurePosixPath, _: dict[str, str], info: SiteInfo) -> str | None:
    if path.suffix.lower() != ".md" or path.as_posix() == "SUMMARY.md":
        return None
    if info.pages is not None and path.as_posix() not in info.pages:
        return None
    return _folder(path).rstrip("/") if path.stem.lower() == "readme" else f"{_folder(path)}{path.stem}"


_Router = Callable[[PurePosixPath, dict[str, str], SiteInfo], "str | None"]
_ROUTERS: dict[str, _Router] = {
    "mkdocs": _mkdocs,
    "docusaurus": _docusaurus,
    "nextra": _nextra,
    "nextjs": _nextjs,
    "sphinx": _sphinx,
    "sphinx-dirhtml": _sphinx_dirhtml,
    "antora": _antora,
    "antora-indexify": lambda path, front, info: _antora(path, front, info, indexify=True),
    "hugo": _hugo,
    "middleman": _middleman,
    "jekyll": _jekyll,
    "vitepress": _vitepress,
    "gitbook": _gitbook,
}
