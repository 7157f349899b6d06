"""AsciiDoc lists: unordered (`*`, `**`, `-`), ordered (`.`, `..`, `1.`, `a.`), callout (`<1>`)
and description (`term::`, `:::`, `;;`) lists, nested by marker, with `+` continuations, as
Markdown list lines nested by two spaces (a plain description list as `term: definition` lines).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.formats.asciidoc_syntax import (
    ANCHOR,
    ATTRLIST,
    COLIST,
    DLIST,
    TITLE,
    BlockParsing,
    Meta,
    delimiter_kind,
    flat,
    indent,
    is_block_start,
    list_item,
    read_delimited,
)
from rag.formats.model import Block

@dataclass
class _Item:
    marker: str
    text: list[str]
    blocks: list[Block] = field(default_factory=list)
    term: str = ""  # a description list's term


class ListReader:
    """Reads one list (all its items, nested lists and attached blocks) for a BlockParser."""

    def __init__(self, parser: BlockParsing) -> None:
        self.parser = parser

    def read(self, lines: list[str], i: int, meta: Meta) -> tuple[list[Block], int]:
        items: list[_Item] = []
        while i < len(lines):
            line = lines[i]
            if not line.strip() or line.startswith("//"):
                j = i
                while j < len(lines) and (not lines[j].strip() or lines[j].startswith("//")):
                    j += 1
                if j < len(lines) and list_item(lines[j]):
                    i = j
                    continue
                break
            if line.strip() == "+" and items:
                i = self._attach(lines, i + 1, items[-1])
            elif match := list_item(line):
                items.append(self._item(match))
                i += 1
            elif items and not is_block_start(line):
                items[-1].text.append(line)
                i += 1
            else:
                break
        return [self.parser.titled(self._list_block(items), meta)], i

    def _item(self, match: re.Match[str]) -> _Item:
        if match.re is DLIST:
            return _Item(match.group(2), [match.group(3)] if match.group(3) else [], term=match.group(1))
        marker = match.group(1)
        marker = "1." if marker[0].isdigit() or marker[0].isalpha() else marker
        return _Item("<>" if match.re is COLIST else marker, [match.group(2)])

    def _attach(self, lines: list[str], i: int, item: _Item) -> int:
        """A `+` continuation: the next block (its metadata lines first) joins the item."""
        start = i
        while i < len(lines) and (ATTRLIST.match(lines[i]) or ANCHOR.match(lines[i]) or TITLE.match(lines[i])):
            i += 1
        if i < len(lines) and delimiter_kind(lines[i]):
            _inner, i = read_delimited(lines, i)
        elif i < len(lines) and lines[i].strip():
            _para, i = self.parser.paragraph_lines(lines, i, in_list=True)
        item.blocks.extend(b for b in self.parser.parse(lines[start:i]) if isinstance(b, Block))
        return i

    def _list_block(self, items: list[_Item]) -> Block:
        """Items nested by marker (a new marker nests, a seen one closes back to its level).
        A plain description list reads as `term: definition` prose lines."""
        simple = all(item.term and not item.blocks for item in items) and len({i.marker for i in items}) == 1
        if simple:
            lines = [self._term_line(item) for item in items]
            return Block("prose", "\n".join(lines))
        stack: list[str] = []
        counters: list[int] = []
        out: list[str] = []
        for item in items:
            if item.marker in stack:
                del stack[stack.index(item.marker) + 1:]
                del counters[len(stack):]
            else:
                stack.append(item.marker)
                counters.append(0)
            counters[-1] += 1
            depth = len(stack) - 1
            ordered = item.marker[0] in ".1<"
            head = f"{counters[-1]}. " if ordered else "- "
            text = self._term_line(item) if item.term else self.parser.inline_lines(item.text)
            out.append("  " * depth + head + text.replace("\n", "\n" + "  " * (depth + 1)))
            if item.blocks:
                out.append(indent(flat(item.blocks), "  " * (depth + 1)))
        return Block("list", "\n".join(out))

    def _term_line(self, item: _Item) -> str:
        term = self.parser.text(item.term)
        definition = self.parser.inline_lines(item.text) if item.text else ""
        return f"{term}: {definition}" if definition else term
