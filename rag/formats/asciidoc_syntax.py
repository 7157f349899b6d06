"""AsciiDoc line syntax shared by the block, list and table parsers: the line patterns, block
metadata (`[style,positional,name=value]`, `[#id%option]`, `.Title`) and small text helpers."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from rag.formats.asciidoc_inline import code_span
from rag.formats.model import Block

ADMONITIONS = {"NOTE": "Note", "TIP": "Tip", "IMPORTANT": "Important", "CAUTION": "Caution",
               "WARNING": "Warning"}

ENTRY = re.compile(r"^:(!?)([\w][\w-]*)(!?):(?:[ \t]+(.*?))?[ \t]*$")
ANCHOR = re.compile(r"^\[\[([A-Za-z_:][\w:.-]*)(?:,\s*(.+))?\]\]\s*$")
ATTRLIST = re.compile(r"^\[(|[#%.\w{,\"'][^\]]*)\]\s*$")
TITLE = re.compile(r"^\.(?![.\s])(.+)$")
HEADING = re.compile(r"^(={1,6}|#{1,6})[ \t]+(\S.*?)(?:[ \t]+\1)?[ \t]*$")
DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|--|[|!,:]={3,}|```.*)[ \t]*$")
BLOCK_MACRO = re.compile(r"^[a-z][\w-]*::\S*\[.*\]\s*$")
BREAK = re.compile(r"^(?:'{3,}|<<<|(?:-[ \t]?){3}|(?:\*[ \t]?){3})\s*$")
ADMONITION_PARAGRAPH = re.compile(r"^(NOTE|TIP|IMPORTANT|CAUTION|WARNING):\s+(.*)$")
ULIST = re.compile(r"^[ \t]*(\*{1,5}|-)[ \t]+(\S.*)$")
OLIST = re.compile(r"^[ \t]*(\.{1,5}|\d+\.|[a-zA-Z]\.)[ \t]+(\S.*)$")
COLIST = re.compile(r"^<(\d+|\.)>[ \t]+(\S.*)$")
DLIST = re.compile(r"^[ \t]*(\S.*?)(:{2,4}|;;)(?:[ \t]+(\S.*))?$")
CALLOUTS = re.compile(r"(?:[ \t]*(?://|#|--|;;|<!--)?[ \t]*<(?:\d+|\.)>(?:[ \t]*-->)?)+[ \t]*$")
INVALID_ID = re.compile(r"<[^>]+>|&(?:[a-z][a-z]+\d{0,2}|#\d\d\d{0,4}|#x[\da-f][\da-f][\da-f]{0,3});|[^ \w\-.]+")
MARKER = re.compile(r"^\s*(?:-|\d+\.)\s+")
SPLIT = re.compile(r",(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)")


@dataclass
class Heading:
    level: int  # 0 for `=`, 1 for `==` …
    title: str  # plain text
    anchor: str


@dataclass
class Meta:
    """The block attribute lines, anchor and title that precede a block."""

    positional: list[str] = field(default_factory=list)
    named: dict[str, str] = field(default_factory=dict)
    options: set[str] = field(default_factory=set)
    id: str = ""
    title: str = ""

    @property
    def style(self) -> str:
        return self.positional[0] if self.positional else ""

    def add(self, attrlist: str) -> None:
        for n, part in enumerate(SPLIT.split(attrlist)):
            part = part.strip()
            name, eq, value = part.partition("=")
            if eq and re.fullmatch(r"[\w-]+", name.strip()):
                self._named(name.strip(), value.strip().strip("\"'"))
            elif n == 0:
                self._shorthand(part)
            else:
                self.positional.append(part.strip("\"'"))

    def _named(self, name: str, value: str) -> None:
        if name in ("options", "opts"):
            self.options.update(v.strip() for v in value.split(","))
        elif name == "id":
            self.id = value
        else:
            self.named[name] = value

    def _shorthand(self, first: str) -> None:
        parts = re.split(r"(?=[#.%])", first)
        self.positional.append(parts[0].strip())
        for part in parts[1:]:
            if part.startswith("#"):
                self.id = part[1:]
            elif part.startswith("%"):
                self.options.add(part[1:])


class BlockParsing(Protocol):
    """What the list and table readers call back on the block parser (asciidoc_blocks.py), for
    an item's or a cell's own blocks and inline text: the block parser imports the readers, so
    they name it through this."""

    def text(self, raw: str, plain: bool = False) -> str: ...

    def parse(self, lines: list[str], top: bool = False) -> list[Block | Heading]: ...

    def paragraph_lines(self, lines: list[str], i: int, in_list: bool = False) -> tuple[list[str], int]: ...

    def inline_lines(self, lines: list[str], hardbreaks: bool = False) -> str: ...

    def titled(self, block: Block, meta: Meta) -> Block: ...


def delimiter_kind(line: str) -> str:
    match = DELIMITER.match(line)
    if not match:
        return ""
    mark = match.group(1)
    if mark.startswith("```"):
        return "fenced"
    if mark[0] in "|!,:" and mark[1] == "=":
        return "table"
    return {"-": "listing" if mark != "--" else "open", ".": "literal", "=": "example", "*": "sidebar",
            "_": "quote", "+": "pass", "/": "comment"}[mark[0]]


def read_delimited(lines: list[str], i: int) -> tuple[list[str], int]:
    """The lines inside the delimited block opening at lines[i], and the index after it."""
    opening = lines[i].strip()
    closing = "```" if opening.startswith("```") else opening
    for j in range(i + 1, len(lines)):
        if lines[j].strip() == closing:
            return lines[i + 1: j], j + 1
    return lines[i + 1:], len(lines)


def list_item(line: str) -> re.Match[str] | None:
    return ULIST.match(line) or OLIST.match(line) or COLIST.match(line) or dlist_item(line)


def dlist_item(line: str) -> re.Match[str] | None:
    match = DLIST.match(line)
    if not match or match.group(1).startswith(("//", "[", ".")) or BLOCK_MACRO.match(line):
        return None
    return match


def is_block_start(line: str) -> bool:
    return bool(ATTRLIST.match(line) or ANCHOR.match(line) or delimiter_kind(line))


def flat(blocks: list[Block]) -> str:
    """Nested blocks (in a list item) as one text."""
    return "\n\n".join(block.text for block in blocks if block.text)


def indent(text: str, by: str) -> str:
    return "\n".join(by + line if line.strip() else line for line in text.split("\n"))


def dedent(lines: list[str]) -> list[str]:
    cut = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return [line[cut:] for line in lines]


def cell_text(blocks: list[Block]) -> str:
    """Blocks of a table cell on one line: code as inline code, list items joined by `;`."""
    parts = []
    for block in blocks:
        if block.kind == "code":
            parts.append(code_span(" ".join(line.strip() for line in block.text.split("\n")[1:-1])))
        elif block.kind == "list":
            items = (MARKER.sub("", line) for line in block.text.split("\n") if line.strip())
            parts.append("; ".join(items))
        else:
            parts.append(" ".join(block.text.split()))
    return " ".join(part for part in parts if part)
