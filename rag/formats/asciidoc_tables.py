"""AsciiDoc tables (`|===`, nested `!===`, CSV `,===`, DSV `:===`) as Markdown pipe rows.

Cells follow Asciidoctor's cell specs (`2+|` colspan, `.2+|` rowspan, `3*|` duplication, a style
letter like `a|`) and the `cols` styles; an `a` (AsciiDoc) cell is parsed as blocks and put on
one line (its code as inline code). The first row is the header when it is alone on the table's
first line and a blank line follows, or with `%header` / `options="header"`; else the header row
is left empty. A `|` inside a cell is written `\\|`.
"""
from __future__ import annotations

import csv
import re
from dataclasses import dataclass

from rag.formats.asciidoc_inline import code_span
from rag.formats.asciidoc_syntax import BlockParsing, Meta, cell_text
from rag.formats.model import Block

_SPEC_END = re.compile(r"(?:^|(?<=[ \t\n]))(?:(\d+)?(?:\.(\d+))?([*+]))?(?:[<^>]?(?:\.[<^>])?)?([adehlmsv])?$")
_COL = re.compile(r"^(?:(\d+)\*)?(?:[<^>]?(?:\.[<^>])?)?(?:\d+%?|~)?([adehlmsv])?$")


@dataclass
class _Cell:
    text: str
    style: str = ""
    colspan: int = 1
    rowspan: int = 1
    first_line: bool = False  # the cell's separator is on the table's first line


def _columns(cols: str) -> list[str]:
    """The style letter of each column from a `cols` value (`3,4,6a`, `1h;1h;1l`, `2*a,3`, `3`)."""
    cols = cols.strip()
    if not cols:
        return []
    if cols.isdigit():
        return [""] * int(cols)
    styles: list[str] = []
    for entry in re.split(r"[,;]", cols):
        match = _COL.match(entry.strip())
        factor, style = (int(match.group(1) or 1), match.group(2) or "") if match else (1, "")
        styles.extend([style] * factor)
    return styles


def _split(text: str, sep: str) -> list[_Cell]:
    """Cells of a psv table body: each unescaped separator opens a cell, with the spec written
    right before it (after whitespace or at a line start)."""
    positions = [m.start() for m in re.finditer(rf"(?<!\\){re.escape(sep)}", text)]
    first_line_end = text.find("\n", text.find(sep)) if sep in text else -1
    cells: list[_Cell] = []
    previous = 0
    for n, pos in enumerate(positions):
        segment = text[previous:pos]
        spec = _SPEC_END.search(segment)
        content = segment[: spec.start()] if spec and spec.group(0) else segment
        if cells:
            cells[-1].text = content
        cell = _Cell("", first_line=first_line_end == -1 or pos < first_line_end)
        if spec and spec.group(0):
            span, rowspan, kind, style = spec.group(1), spec.group(2), spec.group(3), spec.group(4)
            if kind == "+":
                cell.colspan, cell.rowspan = int(span or 1), int(rowspan or 1)
            elif kind == "*":
                cells.extend(_Cell("", style or "", first_line=cell.first_line) for _ in range(int(span or 1) - 1))
            cell.style = style or ""
        cells.append(cell)
        previous = pos + 1
        if n == len(positions) - 1:
            cell.text = text[previous:]
    for cell in cells:
        cell.text = cell.text.strip().replace("\\" + sep, sep)
    return cells


def _rows(cells: list[_Cell], width: int) -> list[list[_Cell | None]]:
    """Cells into rows of `width` columns; a spanned slot is None (an empty cell in Markdown)."""
    rows: list[list[_Cell | None]] = []
    row: list[_Cell | None] = []
    reserved: dict[int, int] = {}  # column → rows still covered by a rowspan from above
    for cell in cells:
        while len(row) < width and reserved.get(len(row), 0) > 0:
            reserved[len(row)] -= 1
            row.append(None)
        start = len(row)
        row.append(cell)
        row.extend([None] * (cell.colspan - 1))
        for col in range(start, start + cell.colspan):
            if cell.rowspan > 1:
                reserved[col] = cell.rowspan - 1
        while len(row) < width and reserved.get(len(row), 0) > 0:
            reserved[len(row)] -= 1
            row.append(None)
        if len(row) >= width:
            rows.append(row)
            row = []
    if row:
        rows.append(row + [None] * (width - len(row)))
    return rows


def _delimited(lines: list[str], sep: str) -> list[list[str]]:
    if sep == ",":
        return [row for row in csv.reader(lines, skipinitialspace=True) if row]
    return [line.split(sep) for line in lines if line.strip()]


def table(parser: BlockParsing, lines: list[str], meta: Meta, mark: str) -> Block:
    fmt = meta.named.get("format", {",": "csv", ":": "dsv"}.get(mark, "psv"))
    styles = _columns(meta.named.get("cols", ""))
    options = meta.options | {o.strip() for o in meta.named.get("options", "").split(",")}
    while lines and not lines[0].strip():
        lines = lines[1:]
    implicit = len(lines) > 1 and lines[0].strip() != "" and not lines[1].strip()
    header = "header" in options or (implicit and "noheader" not in options)
    if fmt in ("csv", "dsv", "tsv"):
        sep = {"csv": ",", "tsv": "\t"}.get(fmt, ":")
        raw = _delimited(lines, sep)
        width = len(styles) or max((len(r) for r in raw), default=0)
        texts = [[parser.text(c) for c in r] + [""] * (width - len(r)) for r in raw]
    else:
        sep = "!" if mark == "!" else "|"
        cells = _split("\n".join(lines), sep)
        width = len(styles) or sum(c.colspan for c in cells if c.first_line) or 1
        texts = [[_cell(parser, c, styles, n, header and r == 0) for n, c in enumerate(row)]
                 for r, row in enumerate(_rows(cells, width))]
    head = texts[0] if header and texts else [""] * width
    body = texts[1:] if header else texts
    out = [_pipe(head), "|" + "---|" * width] + [_pipe(row) for row in body]
    return Block("table", "\n".join(out))


def _cell(parser: BlockParsing, cell: _Cell | None, styles: list[str], column: int, in_header: bool) -> str:
    if cell is None:
        return ""
    style = cell.style or (styles[column] if column < len(styles) else "")
    if in_header:
        style = ""
    if style == "a":
        blocks = [b for b in parser.parse(cell.text.split("\n")) if isinstance(b, Block)]
        text = cell_text(blocks)
    elif style == "l":
        text = code_span(" ".join(cell.text.split()))
    elif style == "m":
        text = code_span(parser.text(cell.text, plain=True))
    else:
        paragraphs = re.split(r"\n[ \t]*\n", cell.text)
        text = " ".join(parser.inline_lines(p.split("\n")).replace("\n", " ") for p in paragraphs if p.strip())
    return text.replace("|", "\\|")


def _pipe(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"
