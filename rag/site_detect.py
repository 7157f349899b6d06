"""Recognising a docs site generator's layout from the files around a docs root.

The generator's own configuration files are read (never run) by line patterns: mkdocs.yml,
docusaurus.config.*, Sphinx's conf.py, antora.yml, Hugo's hugo.* or config.*, Nextra's
theme.config.* or next.config.*, searched in the docs root and its `docs/`, `doc/`, `website/` or
`www/`, then up to three parents (stopping at the repository root) and their `website/` or
`www/`; a Read the Docs config or an Antora playbook beside them tells the dirhtml and indexify
variants. Without any of them the layout is guessed from the docs alone (Antora's module folders,
Docusaurus' category files and sidebar front matter, Nextra's `_meta` files).
"""
from __future__ import annotations

import os
import posixpath
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

import yaml

from rag.site_urls import SiteInfo

_MAX_UP = 3  # parent folders searched for a generator's configuration (stopping at the repository root)
_MAX_SCAN = 300  # files read by the content heuristics when no configuration file is found
_MAX_WALK = 5_000  # entries the content heuristics look at, at most
_CONFIG_BYTES = 256_000


def detect_layout(docs_root: Path) -> str:
    """The layout of the site built from `docs_root` (see the module docstring), "" when unknown."""
    return detect_site(docs_root).layout


def detect_site(docs_root: Path, layout: str | None = None) -> SiteInfo:
    """The generator's configuration nearest `docs_root` (`_search_folders`: a docs folder often
    sits beside mkdocs.yml). With `layout`, only that generator's configuration is looked for."""
    root = docs_root.resolve()
    folders = _search_folders(root)
    family = (layout or "").removesuffix("-dirhtml").removesuffix("-indexify") or None
    for folder in folders:
        for name, finder in _FINDERS:
            if family not in (None, name):
                continue
            found = finder(folder)
            if found is not None:
                kind, source, options = found
                config = next((str(folder / n) for n in _CONFIGS[name] if (folder / n).is_file()), str(folder))
                return _refined(SiteInfo(kind, *_relation(root, source), **options, config=config), folders, layout)
    if layout is None:
        return SiteInfo(_by_content(root))
    return SiteInfo()


def _refined(info: SiteInfo, folders: list[Path], layout: str | None) -> SiteInfo:
    """The variant a configuration beside the sources can tell: Read the Docs' `builder: dirhtml`,
    an Antora playbook's `html_extension_style: indexify`; a layout that was named wins."""
    if layout is not None:
        return replace(info, layout=layout)
    if info.layout == "sphinx" and _any_file(folders, (".readthedocs.yaml", ".readthedocs.yml"),
                                              r"^\s*builder:\s*['\"]?dirhtml"):
        return replace(info, layout="sphinx-dirhtml")
    if info.layout == "antora" and _any_file(folders, ("antora-playbook.yml", "antora-playbook.yaml"),
                                              r"^\s*html_extension_style:\s*['\"]?indexify"):
        return replace(info, layout="antora-indexify")
    return info


def _search_folders(root: Path) -> list[Path]:
    """The docs root, its `docs/` or `doc/`, then each parent up to the repository root (the one
    holding `.git`), each followed by its `website/` or `www/` (where a site's project often is,
    its docs beside it: Docusaurus' `path: '../docs'`)."""
    def with_site(folder: Path, names: tuple[str, ...]) -> list[Path]:
        return [folder, *(folder / name for name in names if (folder / name).is_dir())]

    folders = with_site(root, ("docs", "doc", "website", "www"))
    here = root
    for _ in range(_MAX_UP):
        if (here / ".git").exists() or here.parent == here:
            break
        here = here.parent
        folders += with_site(here, ("website", "www"))
    return folders


def _relation(docs_root: Path, source: Path) -> tuple[str, str]:
    """(source, within) of SiteInfo: where the generator's source folder is from the docs root."""
    source = source.resolve()
    if source == docs_root:
        return "", ""
    if source.is_relative_to(docs_root):
        return source.relative_to(docs_root).as_posix(), ""
    if docs_root.is_relative_to(source):
        return "", docs_root.relative_to(source).as_posix()
    return "", ""  # the sources are elsewhere: the paths are taken as they are


def read_text(path: Path) -> str | None:
    """The start of a small file (`_CONFIG_BYTES`), or None when it is missing, a link or unreadable."""
    try:
        if not path.is_file() or path.is_symlink():
            return None
        with path.open("rb") as handle:
            return handle.read(_CONFIG_BYTES).decode("utf-8", "replace")
    except OSError:
        return None


def _any_file(folders: list[Path], names: tuple[str, ...], pattern: str) -> bool:
    regex = re.compile(pattern, re.MULTILINE)
    return any(regex.search(read_text(folder / name) or "") for folder in folders for name in names)


def _key(text: str, key: str) -> str | None:
    """A top-level `key: value` of a YAML file (unquoted; trailing comment dropped), else None."""
    match = re.search(rf"^{re.escape(key)}\s*:[ \t]*(.*?)[ \t]*(?:#.*)?$", text, re.MULTILINE)
    return None if match is None else match.group(1).strip().strip("'\"")


_Found = tuple[str, Path, dict[str, Any]]


def _find_antora(folder: Path) -> _Found | None:
    text = read_text(folder / "antora.yml")
    if text is None:
        return None
    version = _key(text, "version") or ""
    unversioned = version in ("", "~", "null", "true", "false")
    return "antora", folder, {"component": _key(text, "name") or "", "version": "" if unversioned else version}


def _find_mkdocs(folder: Path) -> _Found | None:
    text = read_text(folder / "mkdocs.yml") or read_text(folder / "mkdocs.yaml")
    if text is None:
        return None
    directory_urls = (_key(text, "use_directory_urls") or "true").lower() not in ("false", "no", "off")
    return "mkdocs", folder / (_key(text, "docs_dir") or "docs"), {"directory_urls": directory_urls}


def _find_docusaurus(folder: Path) -> _Found | None:
    for suffix in ("ts", "js", "mjs", "cjs"):
        text = read_text(folder / f"docusaurus.config.{suffix}")
        if text is not None:
            options = _docs_options(text)
            route = _string_option(options, "routeBasePath")
            return "docusaurus", folder / (_string_option(options, "path") or "docs"), {
                "route_base": "docs" if route is None else route}
    return None


def _docs_options(config: str) -> str:
    """The source of the docs plugin's options object: the classic preset's `docs: {...}`, else
    the first `plugin-content-docs` entry's; "" when neither is there (the defaults apply)."""
    blocks = [_braced(config, match.end() - 1)
              for pattern in (r"\bdocs\s*:\s*\{", r"plugin-content-docs['\"]\s*,\s*\{")
              for match in re.finditer(pattern, config)]
    # themeConfig has a `docs: {...}` too (sidebar settings): the plugin's options name its files
    for mark in ("routeBasePath", "sidebarPath", "path"):
        chosen = next((block for block in blocks if mark in block), None)
        if chosen is not None:
            return chosen
    return ""


def _braced(text: str, start: int) -> str:
    """The text of the `{...}` opening at `start` (braces in strings are not told apart: a regex read)."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i + 1]
    return text[start:]


def _string_option(options: str, name: str) -> str | None:
    """A string option at the top level of an options object's source, else None."""
    option = re.compile(rf"\b{name}\s*:\s*(['\"`])(.*?)\1")
    depth = 0
    for i, char in enumerate(options):
        depth += {"{": 1, "}": -1, "[": 1, "]": -1}.get(char, 0)
        if depth == 1 and (match := option.match(options, i)) is not None:
            return match.group(2)
    return None


def _find_sphinx(folder: Path) -> _Found | None:
    text = read_text(folder / "conf.py")
    if text is None or not re.search(r"^(project|extensions|html_theme|master_doc|root_doc)\s*=", text, re.MULTILINE):
        return None
    return "sphinx", folder, {}


def _find_hugo(folder: Path) -> _Found | None:
    for name in ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json", "config.toml", "config.yaml", "config.yml"):
        text = read_text(folder / name)
        if text is None:
            continue
        if name.startswith("config.") and not (re.search(r"(?i)^\s*['\"]?baseurl", text, re.MULTILINE)
                                                and (folder / "content").is_dir()):
            continue  # a config file of something else
        match = re.search(r"^\s*['\"]?contentDir['\"]?\s*[:=]\s*['\"]?([^'\"\s,#]+)", text, re.MULTILINE)
        return "hugo", folder / (match.group(1) if match else "content"), {}
    return None


def _find_nextra(folder: Path) -> _Found | None:
    themed = any((folder / f"theme.config.{s}").is_file() for s in ("js", "jsx", "ts", "tsx"))
    nextra = themed or any("nextra" in (read_text(folder / f"next.config.{s}") or "")
                           for s in ("js", "mjs", "cjs", "ts"))
    if not nextra:
        return None
    source = next((folder / name for name in ("pages", "content") if (folder / name).is_dir()), folder / "pages")
    return "nextra", source, {}


def _find_nextjs(folder: Path) -> _Found | None:
    """A Next.js app (no Nextra) whose pages are the Markdown of its `content/` folder."""
    config = next((found for suffix in ("js", "mjs", "cjs", "ts")
                   if (found := read_text(folder / f"next.config.{suffix}"))), None)
    if config is None or not (folder / "content").is_dir():
        return None
    return "nextjs", folder / "content", {"trailing_slash": bool(re.search(r"\btrailingSlash\s*:\s*true", config))}


def _find_middleman(folder: Path) -> _Found | None:
    config = read_text(folder / "config.rb") or ""
    if read_text(folder / "config" / "tech-docs.yml") is None and "middleman" not in config.lower() \
            and not re.search(r"^\s*activate\s+:", config, re.MULTILINE):
        return None
    match = re.search(r"^\s*set\s+:source,\s*['\"]([^'\"]+)", config, re.MULTILINE)
    return "middleman", folder / (match.group(1) if match else "source"), {}


def _find_jekyll(folder: Path) -> _Found | None:
    text = read_text(folder / "_config.yml") or read_text(folder / "_config.yaml")
    if text is None:
        return None
    try:
        config = yaml.safe_load(text)
    except yaml.YAMLError:
        config = None
    config = config if isinstance(config, dict) else {}
    listed = config.get("collections")
    collections = {"posts": str(config.get("permalink") or "")} if isinstance(config.get("permalink"), str) else {}
    for name, options in (listed.items() if isinstance(listed, dict) else ()):
        if isinstance(options, dict) and options.get("output") is True:
            collections[str(name)] = str(options.get("permalink") or "")
    collections.setdefault("posts", "")
    excluded = config.get("exclude")
    return "jekyll", folder, {"collections": tuple(collections.items()),
                              "excluded": tuple(str(x) for x in excluded) if isinstance(excluded, list) else ()}


def _find_vitepress(folder: Path) -> _Found | None:
    text = next((found for suffix in ("ts", "mts", "js", "mjs")
                 if (found := read_text(folder / ".vitepress" / f"config.{suffix}"))), None)
    if text is None:
        return None
    source = re.search(r"\bsrcDir\s*:\s*['\"]([^'\"]+)", text)
    return "vitepress", folder / (source.group(1) if source else "."), {
        "clean_urls": bool(re.search(r"\bcleanUrls\s*:\s*true", text))}


def _find_gitbook(folder: Path) -> _Found | None:
    text = read_text(folder / ".gitbook.yaml")
    if text is None and read_text(folder / "SUMMARY.md") is None:
        return None
    source = folder / ((_key(text, "root") or ".") if text else ".")
    summary = read_text(source / "SUMMARY.md")
    pages = None if summary is None else frozenset(
        posixpath.normpath(link) for link in re.findall(r"^\s*[*-]\s+\[[^\]]*\]\(<?([^)>#\s]+\.md)", summary, re.M)
        if "://" not in link)
    return "gitbook", source, {"pages": pages}


_FINDERS: list[tuple[str, Callable[[Path], "_Found | None"]]] = [
    ("antora", _find_antora), ("mkdocs", _find_mkdocs), ("docusaurus", _find_docusaurus),
    ("sphinx", _find_sphinx), ("hugo", _find_hugo), ("nextra", _find_nextra), ("nextjs", _find_nextjs),
    ("middleman", _find_middleman),
    ("jekyll", _find_jekyll), ("vitepress", _find_vitepress), ("gitbook", _find_gitbook),
]

_CONFIGS = {
    "antora": ("antora.yml",), "mkdocs": ("mkdocs.yml", "mkdocs.yaml"),
    "docusaurus": tuple(f"docusaurus.config.{s}" for s in ("ts", "js", "mjs", "cjs")), "sphinx": ("conf.py",),
    "hugo": ("hugo.toml", "hugo.yaml", "hugo.yml", "hugo.json", "config.toml", "config.yaml", "config.yml"),
    "nextra": tuple(f"{n}.{s}" for n in ("theme.config", "next.config") for s in ("js", "jsx", "ts", "tsx", "mjs")),
    "nextjs": tuple(f"next.config.{s}" for s in ("js", "mjs", "cjs", "ts")),
    "middleman": ("config/tech-docs.yml", "config.rb"), "jekyll": ("_config.yml", "_config.yaml"),
    "vitepress": tuple(f".vitepress/config.{s}" for s in ("ts", "mts", "js", "mjs")),
    "gitbook": (".gitbook.yaml", "SUMMARY.md"),
}
_DOCUSAURUS_MARKS = re.compile(r"^(sidebar_position|sidebar_label)\s*:|from\s+['\"]@theme/", re.MULTILINE)


def _by_content(root: Path) -> str:
    """A generator recognised from the docs alone, when no configuration file is in reach (a docs
    folder copied out of its repository): Antora's module folders, Docusaurus' category files and
    sidebar front matter, Nextra's `_meta` files. "" when none of them is there."""
    if any(root.glob("modules/*/pages")):
        return "antora"
    scanned = seen = 0
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and d != "node_modules")
        for name in sorted(files):
            seen += 1
            if name.startswith(("_category_.", "_meta.")):
                return "docusaurus" if name.startswith("_category_.") else "nextra"
            if name.lower().endswith((".md", ".mdx")) and scanned < _MAX_SCAN:
                scanned += 1
                if _DOCUSAURUS_MARKS.search((read_text(Path(folder) / name) or "")[:4000]):
                    return "docusaurus"
        if seen > _MAX_WALK:
            break
    return ""
