"""Markdown → the document model, with markdown-it-py (CommonMark, GFM tables and strikethrough)
and the MkDocs Material, Docusaurus and Hugo dialects (rag/formats/mkdocs.py, docusaurus.py,
hugo.py; none of their constructs occurs in plain Markdown, so all apply to every file).

Sections follow the headings (ATX and setext); a section's anchor is its explicit id, else
GitHub's slug, deduped with `-1`, `-2` (rag/formats/anchors.py). Headings keep every level: the
caller drops a heading equal to the document's final title (rag/documents.py). Blocks are
rendered back to normalised Markdown: inline markup as written (links resolved, so a reference
link `[text][label]` becomes `[text](url)`), lists as `- item` / `1. item` lines with what an
item holds indented by its marker's width (two spaces under `- `), tables as their own pipe rows
(rendered when they have none), code fenced with only its language (the fence meta goes to the
block's title when it names a file, never into the text), HTML with its tags dropped and its text
read as Markdown again (JSX components are HTML to CommonMark).
"""
from __future__ import annotations

import functools
import posixpath
import re
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.formats.anchors import Anchors, explicit_id
from rag.formats.dialect import Dialect
from rag.formats.docusaurus import DOCUSAURUS
from rag.formats.hugo import HUGO
from rag.formats.liquid import LIQUID
from rag.formats.mkdocs import MKDOCS
from rag.formats.vitepress import VITEPRESS
from rag.formats.model import Block, Format, Parsed, ReadFile, Section, Source, TemplatePage, admonition_block
from rag.spans import resolve_links

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.tree import SyntaxTreeNode

# MkDocs' `::: module` rule must come before Docusaurus' `:::`; Hugo's `{{% x %}}` goes before Liquid's `{% x %}`
DIALECT: Dialect = MKDOCS + DOCUSAURUS + HUGO + LIQUID + VITEPRESS
_MAX_DEPTH = 4  # nested includes, and HTML blocks read again as Markdown
_INCLUDED_MAX = 2_000_000  # characters all of a file's includes may add (a snippet used a thousand times)
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?^(?:---|\.\.\.)[ \t]*$\n?", re.S | re.M)
# A tag (HTML or JSX: `{expr}` values) or a comment. Its parts never overlap and no value crosses a
# `<`, so a tag left open costs a scan to the next `<`, not to the end of the text.
_TAG = re.compile(r"""<!--[^<]*?-->|</?[A-Za-z][\w.:-]*+(?:[^<>"'{}]|"[^"<]*"|'[^'<]*'|"""
                  r"""\{[^{}<]*(?:\{[^{}<]*\}[^{}<]*)*\})*>|</?>""")
_TAG_NAME = re.compile(r"</?([A-Za-z][\w.:-]*)")
_TEXT_TAGS = frozenset("a abbr b cite del dfn em i ins kbd mark q s samp small span strong sub sup time u var".split())
_TAB_LABEL = re.compile(r"""<TabItem\b[^>]*?\blabel\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_ALERT = re.compile(r"\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\][ \t]*\n?", re.I)
_LANGUAGE = re.compile(r"\{?\.?([A-Za-z][\w#+-]*)(?![\w=\"'])")
_CODE_TITLE = re.compile(r"""\btitle\s*=\s*(?:"([^"]*)"|'([^']*)')""")
_LISTS = ("bullet_list", "ordered_list")


@dataclass(frozen=True)
class _Heading:
    level: int
    text: str
    explicit: str  # the id written after it, or ""


_Event = _Heading | Block


def parse_markdown(source: Source, indented_code: bool = True) -> Parsed:
    """`indented_code`: whether a block indented four spaces is code (CommonMark; MDX has none)."""
    expander = _Expander(source.read)
    text = expander.expand(source.text, source.path)
    reader = _Reader(_parser(indented_code))
    title, sections = _sections(reader.events(text, 0))
    return Parsed(title, sections, tuple(dict.fromkeys(expander.included)))


FORMAT = Format("markdown", (".md", ".markdown"), parse_markdown)


@functools.cache
def _parser(indented_code: bool) -> MarkdownIt:
    from markdown_it import MarkdownIt  # with the first parse: importing rag.formats stays cheap (`docsbot --help`)

    md = MarkdownIt("commonmark").enable(["table", "strikethrough"])
    if not indented_code:
        md.disable("code")
    for plugin in DIALECT.plugins:
        plugin(md)
    return md


class _Expander:
    """Runs the dialect's text steps on a file and, through their includes, on the files it pulls
    in: each at most _MAX_DEPTH deep, never one already being expanded, _INCLUDED_MAX in all."""

    def __init__(self, read: ReadFile) -> None:
        self._read = read
        self._texts: dict[str, str | None] = {}
        self._left = _INCLUDED_MAX
        self.included: list[str] = []

    def expand(self, text: str, path: str, outer: tuple[str, ...] = ()) -> str:
        def include(target: str, from_file: bool) -> str | None:
            rel = _joined(posixpath.dirname(path) if from_file else "", target)
            if rel is None or rel == path or rel in outer or len(outer) >= _MAX_DEPTH:
                return None
            if rel not in self._texts:
                self._texts[rel] = self._read(rel)
            found = self._texts[rel]
            if found is None or len(found) > self._left:
                return None
            self._left -= len(found)
            self.included.append(rel)
            try:
                return self.expand(_FRONT_MATTER.sub("", found, count=1), rel, (*outer, path))
            except TemplatePage:  # an include that is only a loop shows nothing
                return None

        for step in DIALECT.steps:
            text = step(text, include)
        return text


def _joined(folder: str, target: str) -> str | None:
    """folder/target as a docs-root-relative path, or None when it leaves the docs root (or is a
    URL or an absolute path)."""
    if not target or target.startswith(("/", "\\")) or "://" in target or "\x00" in target:
        return None
    rel = posixpath.normpath(posixpath.join(folder, target))
    return None if rel in (".", "..") or rel.startswith("../") else rel


def _sections(events: Iterable[_Event]) -> tuple[str, tuple[Section, ...]]:
    """(the first H1's text, the sections): the preamble, then one section per heading."""
    title = ""
    anchors = Anchors()
    stack: list[tuple[int, str]] = []
    built: list[tuple[tuple[str, ...], str, list[Block]]] = [((), "", [])]
    for event in events:
        if isinstance(event, Block):
            built[-1][2].append(event)
            continue
        if event.level == 1 and not title:
            title = event.text
        while stack and stack[-1][0] >= event.level:
            stack.pop()
        stack.append((event.level, event.text))
        built.append((tuple(name for _, name in stack), anchors.anchor(event.text, event.explicit), []))
    return title, tuple(Section(headings, anchor, tuple(blocks)) for headings, anchor, blocks in built)


class _Reader:
    """Token trees to headings and blocks. One per file: the reference links its parse collected
    (`env`) resolve in the HTML blocks read again too."""

    def __init__(self, md: MarkdownIt) -> None:
        self.md = md
        self.env: dict[str, object] = {}

    def events(self, text: str, depth: int) -> Iterator[_Event]:
        from markdown_it.tree import SyntaxTreeNode

        lines = text.split("\n")
        for node in SyntaxTreeNode(self.md.parse(text, self.env)).children:
            yield from self._node(node, lines, depth)

    def blocks(self, nodes: Iterable[SyntaxTreeNode], lines: list[str], depth: int) -> list[Block]:
        """The blocks of nodes inside another block (a heading there is bold prose)."""
        return [event if isinstance(event, Block) else Block("prose", f"**{event.text}**")
                for node in nodes for event in self._node(node, lines, depth)]

    def _node(self, node: SyntaxTreeNode, lines: list[str], depth: int) -> Iterator[_Event]:
        """`lines`: the text parsed, where `node.map` points."""
        kind = node.type
        if kind == "heading":
            # the id first: the prose filters drop a `{#id}` written anywhere else
            text, explicit = explicit_id(self._spans(node.children[0].children if node.children else [], False))
            text = _keep_prose(text)
            if text.strip():
                yield _Heading(int(node.tag[1:]), text.strip(), explicit)
        elif kind == "paragraph":
            if text := self._inline(node).strip():
                yield Block("prose", text)
        elif kind in _LISTS:
            yield Block("list", "\n".join(self._list(node, lines, depth)))
        elif kind == "table":
            yield Block("table", self._table(node, lines))
        elif kind in ("fence", "code_block"):
            if code := _code(node.info.strip() if kind == "fence" else "", node.content):
                yield code
        elif kind == "blockquote":
            yield self._quote(self.blocks(node.children, lines, depth))
        elif kind == "html_block":
            yield from self._html(node.content, depth)
        elif kind == "admonition":
            yield _admonition(node.info, str(node.meta.get("title", "")), self.blocks(node.children, lines, depth))
        elif kind == "autodoc":
            yield Block("prose", _code_span(node.info))
        elif kind == "tab":
            yield Block("prose", f"**{node.meta.get('title', '')}:**")
            for child in node.children:
                yield from self._node(child, lines, depth)

    def _inline(self, node: SyntaxTreeNode, links: bool = True) -> str:
        """The Markdown of a paragraph's, heading's or cell's inline content."""
        return _keep_prose(self._spans(node.children[0].children if node.children else [], links))

    def _spans(self, nodes: Iterable[SyntaxTreeNode], links: bool) -> str:
        out: list[str] = []
        for node in nodes:
            kind = node.type
            if kind in ("softbreak", "hardbreak"):
                out.append("\n")
            elif kind == "code_inline":
                out.append(_code_span(node.content))
            elif kind in ("em", "strong", "s"):
                out.append(node.markup + self._spans(node.children, links) + node.markup)
            elif kind == "link":
                inner = self._spans(node.children, links)
                href = str(node.attrs.get("href", ""))
                out.append(f"[{inner}]({href})" if links and href and node.markup != "autolink" else inner)
            elif kind == "image":
                alt = self._spans(node.children, False)
                out.append(f"![{alt}]({node.attrs.get('src', '')})" if links else alt)
            elif kind == "html_inline":
                out.append(_inline_tag(node.content))
            else:
                out.append(node.content)
        return "".join(out)

    def _list(self, node: SyntaxTreeNode, lines: list[str], depth: int) -> list[str]:
        """`- item` / `N. item` lines; what an item holds below its first line (its other
        paragraphs, code, a nested list) indented by the marker's width: two spaces under `- `,
        three under `1. ` (what CommonMark needs to read it as the item's again)."""
        ordered = node.type == "ordered_list"
        start = int(node.attrs.get("start", 1)) if ordered else 1
        out: list[str] = []
        for n, item in enumerate(node.children):
            body = ""
            for child in item.children:
                text = "\n\n".join(block.text for block in self.blocks([child], lines, depth))
                if body:  # a nested list, or a paragraph of a tight list, follows on the next line
                    body += "\n" if child.type in _LISTS or child.hidden else "\n\n"
                body += text
            marker = f"{start + n}. " if ordered else "- "
            first, *rest = body.split("\n")
            out.append((marker + first).rstrip())
            out.extend(" " * len(marker) + line if line.strip() else "" for line in rest)
        return out

    def _table(self, node: SyntaxTreeNode, lines: list[str]) -> str:
        """The table's own pipe rows when every row is one (they are normalised Markdown already,
        and keep the column alignment its chunks were always embedded with), else rendered."""
        written = [line.strip() for line in lines[node.map[0]:node.map[1]]] if node.map else []
        if written and all(row.startswith("|") for row in written):
            return "\n".join(resolve_links(_keep_prose(row), self._links()) for row in written)
        rows = [[self._inline(cell).replace("|", "\\|").replace("\n", " ").strip() for cell in row.children]
                for part in node.children for row in part.children]
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows[1:]])

    def _links(self) -> dict[str, str]:
        """The page's reference links (`[label]: url`, which the parser consumed), by folded label."""
        references = self.env.get("references")
        return {" ".join(label.split()).lower(): str(ref.get("href", "")) for label, ref in references.items()
                } if isinstance(references, dict) else {}

    def _quote(self, inner: list[Block]) -> Block:
        """A block quote as `> ` lines; a GitHub alert (`> [!NOTE]`) as an admonition."""
        if inner and inner[0].kind == "prose" and (alert := _ALERT.match(inner[0].text)):
            rest = inner[0].text[alert.end():].strip()
            return _admonition(alert.group(1), "", ([Block("prose", rest)] if rest else []) + inner[1:])
        text = "\n\n".join(block.text for block in inner)
        return Block("prose", "\n".join(f"> {line}" if line else ">" for line in text.split("\n")))

    def _html(self, html: str, depth: int) -> Iterator[_Event]:
        """An HTML (or JSX) block's text without its tags, read as Markdown again: a component's
        children are Markdown. Comments, scripts and styles show nothing; <pre> is code."""
        opening = html.lstrip()[:8].lower()
        if opening.startswith(("<!", "<?", "<script", "<style")):
            return
        text = textwrap.dedent(_TAG.sub(_tag_text, html)).strip("\n")
        if not text.strip():
            return
        if opening.startswith("<pre"):
            if code := _code("", text):
                yield code
        elif depth >= _MAX_DEPTH or text == html:
            yield Block("prose", text.strip())
        else:
            yield from self.events(text, depth + 1)


def _keep_prose(text: str) -> str:
    """Inline Markdown without what the dialects' prose filters drop (JSX tags)."""
    for keep in DIALECT.prose:
        text = keep(text)
    return text


def _code(info: str, code: str) -> Block | None:
    """A fenced code block with the language only; the fence meta never shows (a `title="..."`
    becomes the block's title). None when the dialect hides it or nothing is left."""
    shown: str | None = code
    for keep in DIALECT.code:
        if shown is None:
            break
        shown = keep(info, shown)
    if shown is None or not shown.strip():
        return None
    shown = shown.strip("\n")
    language = match.group(1) if (match := _LANGUAGE.match(info)) else ""
    title = (match.group(1) or match.group(2)) if (match := _CODE_TITLE.search(info)) else ""
    fence = "```"
    while fence in shown:
        fence += "`"
    return Block("code", f"{fence}{language}\n{shown}\n{fence}", language, title)


def _admonition(kind: str, title: str, inner: list[Block]) -> Block:
    """`**Tip:** text` (`**Tip: Title:** text`); a body that starts with a list, code or a quote
    starts on the next line."""
    return admonition_block(kind.replace("-", " ").capitalize() + (f": {title}" if title else ""), inner)


def _code_span(code: str) -> str:
    ticks = "`"
    while ticks in code:
        ticks += "`"
    pad = " " if code.startswith("`") or code.endswith("`") else ""
    return f"{ticks}{pad}{code}{pad}{ticks}"


def _tag_name(tag: str) -> str:
    name = _TAG_NAME.match(tag)
    return name.group(1).lower() if name else ""


def _inline_tag(tag: str) -> str:
    """What an inline HTML tag leaves in a paragraph: `<code>` its backtick, `<br>` a line break."""
    name = _tag_name(tag)
    return "`" if name == "code" else "\n" if name == "br" else ""


def _tag_text(match: re.Match[str]) -> str:
    """What a tag of an HTML block leaves: a Docusaurus tab its label, `<code>` its backtick, a
    text-level tag nothing, any other (a cell, a paragraph, a component) a space between the texts
    it separates (not a line break: the lines keep their indentation for the dedent)."""
    tag = match.group(0)
    if label := _TAB_LABEL.match(tag):
        return f"**{label.group(1) or label.group(2)}:**\n"
    name = _tag_name(tag)
    return "`" if name == "code" else "" if name in _TEXT_TAGS or tag.startswith("<!--") else " "
