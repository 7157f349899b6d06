"""MkDocs Material: admonitions, content tabs, snippets and API references.

* `!!! note "Title"`, collapsible `??? warning` / `???+ tip`: an admonition whose body is the
  lines indented by four spaces below it (an `admonition` token, `info` the kind, `meta["title"]`
  the title, "" when none);
* `=== "Tab"`: a content tab, the same shape (a `tab` token, `meta["title"]` the tab's name);
* `--8<-- "path"` (pymdownx.snippets): the line is replaced by the file's text, indented like the
  line, before parsing; a block of paths between two `--8<--` lines includes each. A path is
  tried against the docs root, then the including file's folder (snippets' `base_path` is
  usually the project root, which is most often the docs root's parent or the docs root itself).
  `;--8<--` is an escaped marker (shown without the `;`); a snippet that cannot be read is dropped;
* `::: package.module` (mkdocstrings, mkautodoc) and its indented options: an `autodoc` token, the
  object's name (its docstring lives in code, outside the docs tree).

Heading ids written with `attr_list` (`## Title { #id }`) are read with every other explicit id
(rag/formats/anchors.py). These constructs never occur in plain Markdown, so the dialect applies
to every `.md` file, with or without an mkdocs.yml (which usually lies outside the docs root).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from rag.formats.dialect import Dialect, Include

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.ruler import RuleOptionsType
    from markdown_it.rules_block import StateBlock

_ADMONITION = re.compile(r"(?:!!!|\?\?\?\+?)[ \t]+([\w-]+)(?:[ \t]+[\w-]+)*(?:[ \t]+\"(.*)\")?[ \t]*")
_AUTODOC = re.compile(r":::[ \t]+([\w.:-]*\w)[ \t]*")
_TAB = re.compile(r"===[!+]?[ \t]+\"(.*)\"[ \t]*")
_SNIPPET = re.compile(r"([ \t]*)(;?)-+8<-+[ \t]+([\"'])(.+?)\3[ \t]*")
_SNIPPET_BLOCK = re.compile(r"([ \t]*)-+8<-+[ \t]*")

BlockRule = Callable[["StateBlock", int, int, bool], bool]
Describe = Callable[[re.Match[str]], tuple[str, str]]  # the opening line → (token info, title)


def _indented_block(kind: str, pattern: re.Pattern[str], describe: Describe) -> BlockRule:
    """A block rule for `pattern`'s line and the lines indented four spaces more below it: a
    `{kind}_open` token (`info` and `meta["title"]` from `describe`), the body, `{kind}_close`."""

    def rule(state: StateBlock, start: int, end: int, silent: bool) -> bool:
        if state.is_code_block(start):
            return False
        match = pattern.fullmatch(state.src, state.bMarks[start] + state.tShift[start], state.eMarks[start])
        if not match:
            return False
        if silent:
            return True
        body_indent = state.sCount[start] + 4
        last, line = start, start + 1
        while line < end and (state.isEmpty(line) or state.sCount[line] >= body_indent):
            last = last if state.isEmpty(line) else line
            line += 1
        opening = state.push(f"{kind}_open", "div", 1)
        opening.info, title = describe(match)
        opening.meta = {"title": title}
        opening.map = [start, last + 1]
        old_indent, old_max = state.blkIndent, state.lineMax
        state.blkIndent, state.lineMax = body_indent, last + 1
        state.md.block.tokenize(state, start + 1, last + 1)
        state.blkIndent, state.lineMax = old_indent, old_max
        state.push(f"{kind}_close", "div", -1)
        state.line = last + 1
        return True

    return rule


def _autodoc(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    """`::: package.module` and the option lines indented below it (mkdocstrings, mkautodoc): an
    `autodoc` token naming the object whose docstring the site shows (not in the docs tree)."""
    if state.is_code_block(start):
        return False
    match = _AUTODOC.fullmatch(state.src, state.bMarks[start] + state.tShift[start], state.eMarks[start])
    if not match:
        return False
    if silent:
        return True
    line = start + 1
    while line < end and not state.isEmpty(line) and state.sCount[line] > state.sCount[start]:
        line += 1
    token = state.push("autodoc", "", 0)
    token.info = match.group(1)
    token.map = [start, line]
    state.line = line
    return True


def blocks(md: MarkdownIt) -> None:
    """The block rules; they come before Docusaurus' `:::` admonitions (rag/formats/markdown.py
    adds this dialect first), so `::: httpx.Client` is an API reference, not an admonition."""
    alt: RuleOptionsType = {"alt": ["paragraph", "reference", "blockquote", "list"]}
    md.block.ruler.before("fence", "mkdocs_autodoc", _autodoc, alt)
    md.block.ruler.before("fence", "mkdocs_admonition", _indented_block(
        "admonition", _ADMONITION, lambda m: (m.group(1).lower(), m.group(2) or "")), alt)
    md.block.ruler.before("fence", "mkdocs_tab", _indented_block("tab", _TAB, lambda m: ("", m.group(1))), alt)


def snippets(text: str, include: Include) -> str:
    out: list[str] = []
    block: str | None = None  # the indent of an open block of snippet paths
    for line in text.split("\n"):
        if match := _SNIPPET.fullmatch(line):
            indent, escaped, _, target = match.groups()
            out.append(line.replace(";", "", 1) if escaped else _indent(_snippet(target, include), indent))
        elif match := _SNIPPET_BLOCK.fullmatch(line):
            block = match.group(1) if block is None else None
        elif block is not None:
            if line.strip() and not line.lstrip().startswith(";"):
                out.append(_indent(_snippet(line.strip(), include), block))
        else:
            out.append(line)
    return "\n".join(out)


def _snippet(target: str, include: Include) -> str:
    found = include(target, False)
    return found if found is not None else include(target, True) or ""


def _indent(text: str, indent: str) -> str:
    return "\n".join(indent + line if line.strip() else line for line in text.rstrip("\n").split("\n"))


MKDOCS = Dialect(steps=(snippets,), plugins=(blocks,))
