"""AsciiDoc (as Asciidoctor and Antora write it) into the shared document model.

No maintained Python AsciiDoc parser exists, so this is a subset parser: the preprocessor
(asciidoc_reader.py), line syntax (asciidoc_syntax.py), blocks (asciidoc_blocks.py), lists
(asciidoc_lists.py), tables (asciidoc_tables.py) and inline markup (asciidoc_inline.py). Supported:

- Document title `= Title` (or `# Title`) and its header: attribute entries, author and revision
  lines. Sections `==` … `======` (or `##` …); `[discrete]` headings are kept as prose.
- Section anchors: an explicit `[#id]` / `[[id]]` / `[id=…]` above the heading, else Asciidoctor's
  auto id: idprefix (default `_`) + the lower-cased title without invalid characters, runs of
  spaces, `.`, `-` (and the separator) as one idseparator (default `_`), `_2`, `_3` on a clash
  (`== Font Files` → `_font_files`); `:idprefix:` / `:idseparator:` / `:sectids!:` from the page or
  the component's antora.yml are honoured.
- Attribute entries `:name: value` (header and body, `:name!:` unsets, ` \\` continues a value),
  substituted in text as `{name}`; antora.yml `asciidoc.attributes` (a trailing `@` soft-sets,
  `false` unsets) and Antora's page attributes (`page-component-version` …); built-ins such as
  `{empty}`, `{nbsp}`, `{zwsp}`, `{plus}`, `{vbar}`, `{startsb}`/`{endsb}`. An undefined reference is
  dropped from the text; an escaped `\\{name}` is shown as the literal `{name}` in inline code.
- `include::path[]` resolved with Source.read inside the docs root (relative to the including
  file), also inside listing blocks, with `tag=`/`tags=` (`**`, `*`, `!name`) and `lines=`;
  `leveloffset` is ignored; Antora resource ids `partial$…`, `example$…`, `attachment$…`,
  `page$…`, `module:family$…` resolve inside the component (`modules/<module>/partials/…`);
  every file pulled in is listed in Parsed.includes; an unresolved include is dropped.
- `ifdef::`/`ifndef::` (`a,b` any, `a+b` all, and the one-line `ifdef::a[text]`) evaluated on the
  attributes known at that line plus Antora's site attributes (`env-site`, `site-gen-antora`,
  `backend-html5`); `ifeval::` keeps its content; the directive lines never reach the text.
- Listing `----` and literal `....` blocks, `[source,lang]` / `[,lang]` (language default
  `:source-language:`), ``` fenced code, `[source]` paragraphs and indented literal paragraphs,
  as fenced code with the language; callout markers (`<1>`) are removed; `subs=attributes+` is
  honoured. `[stem]` blocks as `math` code; passthrough `++++` and comment blocks are dropped.
- Admonitions: `NOTE: text` paragraphs and `[NOTE]` + `====` blocks (NOTE, TIP, IMPORTANT,
  CAUTION, WARNING), as admonition blocks `**Note:** text` titled `Note` (with a block title:
  `**Warning: <title>:** text`, titled `Warning: <title>`), as the Markdown parsers write them.
- Example `====`, sidebar `****`, quote `____`, open `--` blocks: their content; `[verse]`.
- Block titles `.Title`: the block's title, and a bold lead line on prose, lists and tables.
- Lists: unordered `*`, `**`, `-`; ordered `.`, `..`, `1.`, `a.`; callout lists `<1>`; checklists;
  nesting by marker; `+` continuations attach a block to the item; description lists
  `term:: definition` (`:::`, `;;`) as `term: definition` lines.
- Tables `|===` (and nested `!===`, CSV `,===`, DSV `:===`): cell specs (`2+|`, `.2+|`, `3*|`,
  `a|`), `cols` styles (an `a` column's cells are parsed as AsciiDoc and set on one line), header
  row when the first line holds the first row and a blank line follows, or `%header`.
- Inline: `xref:page.adoc#frag[text]`, `<<id,text>>` as their text (an empty xref: the target
  page's title, or its section's title in the same page); `link:url[text]` and `https://…[text]`
  as `[text](url)`; `kbd:[Ctrl+T]` and `btn:[Save]` as the keys, `menu:File[Save]` as
  `File > Save`; `footnote:[text]` as ` (text)`; `image:`/`image::`/`icon:` dropped; passthroughs
  `+text+`, `++text++`, `+++text+++`, `pass:[…]` as their text; monospace as inline code; bold,
  italic, highlight, super/subscript and `[.role]#text#` as plain text; index terms.
- Comments `//` and `////` blocks dropped; `'''` and `<<<` breaks dropped; block macros
  (`image::`, `toc::[]`, `video::` …) dropped.

Not supported: `ifeval::` evaluation, `leveloffset`, counters, custom substitution groups other
than attributes in code, multi-line cell specs in CSV tables, nested sections inside blocks.
"""
from __future__ import annotations

import posixpath
import re

from rag.formats.asciidoc_blocks import BlockParser, Document
from rag.formats.asciidoc_syntax import ENTRY, Heading
from rag.formats.asciidoc_inline import Inline
from rag.formats.asciidoc_reader import (
    SITE_ATTRIBUTES,
    Preprocessor,
    component_attributes,
    component_root,
    page_path,
)
from rag.formats.model import Block, Format, Parsed, ReadFile, Section, Source

__all__ = ["FORMAT", "is_antora_non_page", "parse"]

_NON_PAGE = re.compile(r"(?:^|/)modules/[^/]+/(?:(?:partials|examples|attachments|images)/|nav\.adoc$)")
_DOC_TITLE = re.compile(r"^(?:=|#)[ \t]+(\S.*?)[ \t]*$")
_REF = re.compile("\ue002([^\ue003]*)\ue003")


def is_antora_non_page(path: str) -> bool:
    """Whether a path is an Antora partial, example, attachment, image or nav file: not a page of
    its own (indexed only where a page includes it)."""
    return _NON_PAGE.search(path.replace("\\", "/")) is not None


class _Titles:
    """The title of an xref's target page (read once), else the page's name."""

    def __init__(self, path: str, component: str, read: ReadFile, attributes: dict[str, str]) -> None:
        self.path, self.component, self.read, self.attributes = path, component, read, attributes
        self.cache: dict[str, str] = {}

    def __call__(self, target: str) -> str:
        page = target.split("#", 1)[0]
        name = posixpath.splitext(posixpath.basename(page.split("$")[-1].split(":")[-1]))[0]
        rel = page_path(target, self.path, self.component) if page else None
        if rel is None:
            return name or target.lstrip("#")
        if rel not in self.cache:
            text = self.read(rel) or ""
            title = next((m.group(1) for line in text.split("\n")[:40] if (m := _DOC_TITLE.match(line))), "")
            self.cache[rel] = Inline(dict(self.attributes), lambda t: t).text(title, plain=True) if title else name
        return self.cache[rel]


def _attributes(source: Source) -> tuple[str, dict[str, str], set[str]]:
    component, antora = component_attributes(source.path, source.read)
    docname = posixpath.splitext(posixpath.basename(source.path))[0]
    attributes = {"sectids": "", "idprefix": "_", "idseparator": "_", "docname": docname}
    if component_root(source.path) is not None and (component or antora):
        attributes.update(SITE_ATTRIBUTES)
    locked = {name for name in antora if not name.startswith("page-")} - _soft(source)
    attributes.update(antora)
    return component, attributes, locked


def _soft(source: Source) -> set[str]:
    """antora.yml attributes set with a trailing `@` (a page may change them)."""
    root = component_root(source.path)
    text = source.read(root + "antora.yml") if root is not None else None
    return set(re.findall(r"^\s+([\w-]+):\s*['\"]?[^\n#]*@['\"]?\s*$", text or "", re.M))


def _header(lines: list[str], doc: Document) -> tuple[str, dict[str, str], int]:
    """The document title and header attribute entries; returns where the body starts."""
    i, meta = 0, dict[str, str]()
    while i < len(lines) and (not lines[i].strip() or lines[i].startswith("//") or ENTRY.match(lines[i])):
        if entry := ENTRY.match(lines[i]):
            doc.entry(entry, entry.group(4) or "")
        i += 1
    title_match = _DOC_TITLE.match(lines[i]) if i < len(lines) and not lines[i].startswith(("==", "##")) else None
    if title_match is None:
        return "", meta, i
    title = doc.inline.text(title_match.group(1), plain=True)
    i += 1
    position = 0
    while i < len(lines) and lines[i].strip():
        line = lines[i]
        if entry := ENTRY.match(line):
            doc.entry(entry, entry.group(4) or "")
            meta[entry.group(2).lower()] = doc.attributes.get(entry.group(2).lower(), "")
        elif not line.startswith("//") and position < 2:
            meta["author" if position == 0 else "revision"] = line.strip()
            position += 1
        i += 1
    return title, meta, i


def _sections(items: list[Block | Heading]) -> list[Section]:
    out: list[Section] = []
    path: list[tuple[int, str]] = []
    anchor, blocks = "", list[Block]()
    for item in items:
        if isinstance(item, Heading):
            out.append(Section(tuple(t for _, t in path), anchor, tuple(blocks)))
            while path and path[-1][0] >= item.level:
                path.pop()
            path.append((item.level, item.title))
            anchor, blocks = item.anchor, []
        else:
            blocks.append(item)
    out.append(Section(tuple(t for _, t in path), anchor, tuple(blocks)))
    return out


def _resolve_refs(sections: list[Section], ids: dict[str, str]) -> list[Section]:
    """`<<id>>` without text: the title of the section (or anchor) with that id."""
    def one(m: re.Match[str]) -> str:
        return ids.get(m.group(1)) or m.group(1).lstrip("_").replace("_", " ")

    def block(b: Block) -> Block:
        if "\ue002" not in b.text:
            return b
        return Block(b.kind, _REF.sub(one, b.text), b.language, _REF.sub(one, b.title))

    return [Section(s.headings, s.anchor, tuple(block(b) for b in s.blocks)) for s in sections]


def parse(source: Source) -> Parsed:
    """One AsciiDoc file into the model; never raises (an unreadable file gives no blocks)."""
    try:
        return _parse(source)
    except Exception as error:  # noqa: BLE001 - a parser must degrade, not fail the sync
        return Parsed("", (Section((), "", ()),), (), {"error": f"{type(error).__name__}: {error}"})


def _parse(source: Source) -> Parsed:
    component, attributes, locked = _attributes(source)
    reader = Preprocessor(source.read, component, dict(attributes))
    lines = reader.lines(source.text.replace("\r\n", "\n"), source.path)
    inline = Inline(attributes, _Titles(source.path, component, source.read, attributes))
    doc = Document(inline, locked)
    title, meta, start = _header(lines, doc)
    items = BlockParser(doc).parse(lines[start:], top=True)
    sections = _resolve_refs(_sections(items), doc.ids)
    return Parsed(title, tuple(sections), tuple(dict.fromkeys(reader.includes)), meta)


def is_page(path: str) -> bool:
    return not is_antora_non_page(path)


FORMAT = Format("asciidoc", (".adoc", ".asciidoc"), parse, is_page)  # not `.asc`: PGP signatures use it
