"""Which language a document is written in, and which page it is a translation of, from where it
lies in the docs tree: sites in several languages keep one file per page and language, and those
files must not compete with each other for the top k (rag/retrieval.py keeps one language a page).

The markers recognised, first match wins:

- Docusaurus: `i18n/<lang>/docusaurus-plugin-content-docs/current/<path>` is `docs/<path>`
  (`version-<v>/` is `versioned_docs/version-<v>/`, the blog and pages plugins `blog/`, `src/pages/`).
- A language folder under `i18n/`, `locales/` or `locale/`: `locales/<lang>/<path>` is `<path>`.
- A language folder at the top of the docs root, or of its `docs/` (MkDocs i18n) or `content/`
  (Hugo) folder, when that folder holds at least two language folders (`language_folders`): one
  folder named `it/` or `id/` is a section about IT or ids, `en/` beside `ja/` is a locale tree.
- A suffix before the extension (Nextra, MkDocs i18n suffix style, Hugo): `page.ja.mdx`,
  `page.pt-BR.md` are `page.mdx`, `page.md`.

A language is a code from `LANGUAGES` (ISO 639-1 codes docs are translated into, not all of
them: `page.sh.md` or `model.ml.md` is no language), optionally with a script or region subtag
(`zh-Hans`, `pt-BR`). A file without a marker has language "" (the docs' default language) and is
its own page.
"""
from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

# ISO 639-1 codes of languages documentation sites are translated into. Codes that are also common
# words or file-name parts (sh, ts, ml, ps, os, io, my, as, or, is, am, an, to) are left out.
LANGUAGES = frozenset("""
af ar az be bg bn bs ca cs cy da de el en eo es et eu fa fi fil fr ga gl gu he hi hr hu hy id it ja
ka kk km kn ko ky lo lt lv mk mn mr ms nb ne nl nn no pa pl pt ro ru si sk sl sq sr sv sw ta te th
tl tr uk ur uz vi zh
""".split())
_TAG = re.compile(r"([a-z]{2,3})(?:[-_]([a-z]{4}))?(?:[-_]([a-z]{2}|\d{3}))?", re.I)
_LOCALE_PARENTS = ("i18n", "locales", "locale")
_TREE_PARENTS = ("", "docs", "content")  # where a folder of language folders is looked for
_DOCUSAURUS = "docusaurus-plugin-content-"


@dataclass(frozen=True)
class Variant:
    language: str  # a canonical tag ("ja", "pt-BR", "zh-Hans"), "" without a marker
    page: str  # the path the page has without its language marker: the same for all its variants


def language_tag(text: str, separators: str = "-_") -> str:
    """`text` as a canonical language tag when it is one of LANGUAGES (with an optional script
    and region subtag, joined by one of `separators`), else ""."""
    match = _TAG.fullmatch(text)
    if not match or match.group(1).lower() not in LANGUAGES or any(
            sep not in separators for sep in re.findall(r"[-_]", text)):
        return ""
    primary, script, region = match.groups()
    return "-".join(part for part in (primary.lower(), script and script.title(), region and region.upper()) if part)


def primary(tag: str) -> str:
    """The primary language subtag: "ja" of "ja-JP", "" of ""."""
    return tag.split("-", 1)[0].split("_", 1)[0].lower()


def variant(path: str, folders: Collection[str] = ()) -> Variant:
    """The language and page of a docs-root-relative POSIX path. `folders`: the language folders
    of the tree (`language_folders`), e.g. {"en", "ja"} or {"content/en", "content/ja"}."""
    parts = path.split("/")
    for rule in (_docusaurus, _locale_parent):
        found = rule(parts)
        if found:
            return found
    for depth in (1, 2):
        if len(parts) > depth and "/".join(parts[:depth]) in folders:
            return Variant(language_tag(parts[depth - 1]), "/".join(parts[:depth - 1] + parts[depth:]))
    return _suffix(parts) or Variant("", path)


def _docusaurus(parts: list[str]) -> Variant | None:
    """`[prefix/]i18n/<lang>/docusaurus-plugin-content-<plugin>/...` as the file it translates."""
    for i in range(len(parts) - 3):
        lang = language_tag(parts[i + 1]) if parts[i] == "i18n" else ""
        if lang and parts[i + 2].startswith(_DOCUSAURUS):
            source = _docusaurus_source(parts[i + 2][len(_DOCUSAURUS):], parts[i + 3:])
            if source is not None:
                return Variant(lang, "/".join(parts[:i] + source))
    return None


def _docusaurus_source(plugin: str, rest: list[str]) -> list[str] | None:
    """Where the docs, blog or pages plugin keeps the untranslated file (None: not a page of theirs)."""
    if plugin == "blog":
        return ["blog", *rest]
    if plugin == "pages":
        return ["src", "pages", *rest]
    if plugin.startswith("docs") and len(rest) > 1:
        instance = plugin[len("docs-"):] if plugin.startswith("docs-") else ""
        if rest[0] == "current":
            return [instance or "docs", *rest[1:]]
        if rest[0].startswith("version-"):
            versioned = f"{instance}_versioned_docs" if instance else "versioned_docs"
            return [versioned, *rest]
    return None


def _locale_parent(parts: list[str]) -> Variant | None:
    """`[prefix/]locales/<lang>/<path>` as `[prefix/]<path>`."""
    for i in range(len(parts) - 2):
        lang = language_tag(parts[i + 1]) if parts[i] in _LOCALE_PARENTS else ""
        if lang:
            return Variant(lang, "/".join(parts[:i] + parts[i + 2:]))
    return None


def _suffix(parts: list[str]) -> Variant | None:
    """`name.<lang>.<ext>` as `name.<ext>` (the stem and extension not empty)."""
    pieces = parts[-1].split(".")
    if len(pieces) < 3 or not pieces[0]:
        return None
    lang = language_tag(pieces[-2], separators="-")
    if not lang:
        return None
    return Variant(lang, "/".join([*parts[:-1], ".".join(pieces[:-2] + pieces[-1:])]))


def language_folders(root: Path) -> frozenset[str]:
    """The folders of the docs tree at `root` that are language folders: those named a language
    at its top, or in its `docs/` or `content/` folder, where that folder holds two of them or
    more. Symbolic links and hidden folders are not looked at; an unreadable folder holds none."""
    found: set[str] = set()
    for parent in _TREE_PARENTS:
        names = [name for name in _subfolders(root / parent if parent else root) if language_tag(name)]
        if len(names) >= 2:
            found.update(f"{parent}/{name}" if parent else name for name in names)
    return frozenset(found)


def _subfolders(folder: Path) -> list[str]:
    try:
        with os.scandir(folder) as entries:
            return [e.name for e in entries if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
    except OSError:
        return []
