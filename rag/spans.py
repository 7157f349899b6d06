"""A section's Markdown as the units an extractive answer quotes, and the blocks they belong to.

Units are sentences of a paragraph, items of a list (with everything indented under them: an
item's code block is part of the item), whole code blocks, table rows, and notes (block quotes,
"Note:", "Warning:", "Unless ..."). A unit knows its block, so a span can be widened to whole
blocks: a lead-in ("via the following command:") to what it introduces, a list or a table to all
of it. Reference-link definitions (`[label]: url`) are collected, never quoted, and used to
resolve `[text][label]`. A code block whose closing fence is not in the text (the chunk ended
inside it) is marked incomplete: it must not be quoted, or its fences would not balance.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})(.*)$")
_ITEM = re.compile(r"^( {0,3})([-*+]|\d+[.)])\s+")
NUMBERED = re.compile(r"^\d+[.)]\s")  # a numbered list item's first line
_REF_DEF = re.compile(r"^ {0,3}\[([^\]]+)\]:\s*(\S+)")
_REF_USE = re.compile(r"\[([^\[\]]+)\]\[([^\[\]]*)\]")
_NOTE = re.compile(r"^(?:>|\W*(?:note|warning|important|caution|unless|except)\b)", re.I)
_INTRO = re.compile(r"\b(?:following|below|this command|these commands)\b", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(])")
_TABLE_RULE = re.compile(r"\|?[\s:|-]+\|?")


@dataclass
class Unit:
    text: str  # as quoted
    kind: str  # prose, item, code, row, note
    block: int  # index of its block in the section
    lead_in: bool = False  # ends with ':' and introduces the next block
    complete: bool = True  # False: holds a code block whose closing fence is missing
    step: int = 0  # an item's number in a numbered list


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]


@dataclass
class Parsed:
    units: list[Unit] = field(default_factory=list)
    tables: dict[int, Table] = field(default_factory=dict)  # block index → table
    numbered: set[int] = field(default_factory=set)  # blocks that are numbered lists
    links: dict[str, str] = field(default_factory=dict)  # reference label (folded) → url


def is_code(text: str) -> bool:
    return FENCE.match(text) is not None


def fences_balanced(text: str) -> bool:
    """Every opened fence is closed (a closing fence: the same character, at least as long)."""
    opened = ""
    for line in text.split("\n"):
        match = FENCE.match(line)
        if not match:
            continue
        marker = match.group(2)
        if not opened:
            opened = marker
        elif marker[0] == opened[0] and len(marker) >= len(opened) and not match.group(3).strip():
            opened = ""
    return not opened


def ends_lead_in(text: str) -> bool:
    return text.rstrip("*_` ").endswith(":")


def resolve_links(text: str, links: dict[str, str]) -> str:
    """`[text][label]` (and `[text][]`) as `[text](url)` when the label is defined, else `text`."""
    def one(m: re.Match[str]) -> str:
        url = links.get((m.group(2) or m.group(1)).strip().lower())
        return f"[{m.group(1)}]({url})" if url else m.group(1)

    return _REF_USE.sub(one, text)


def _dedent(lines: list[str]) -> list[str]:
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    cut = min(indents, default=0)
    return [line[cut:] for line in lines]


def _raw_blocks(text: str) -> list[tuple[str, list[str], bool]]:
    """(kind, lines, complete): code, list, table, quote or paragraph; an indented line after a
    list item (blank lines between allowed) stays in the item, code fences included."""
    blocks: list[tuple[str, list[str], bool]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.strip():
            i += 1
            continue
        if fence := FENCE.match(line):
            end, closed = _fence_end(lines, i, fence.group(2))
            blocks.append(("code", _dedent(lines[i:end]), closed))
            i = end
            continue
        if _ITEM.match(line):
            start = i
            i, closed = _list_end(lines, i)
            blocks.append(("list", lines[start:i], closed))
            continue
        kind = "table" if line.lstrip().startswith("|") else "quote" if line.lstrip().startswith(">") else "para"
        start = i
        while i < len(lines) and _continues(kind, lines[i]):
            i += 1
        blocks.append((kind, [part.strip() for part in lines[start:i]], True))
    return blocks


def _continues(kind: str, line: str) -> bool:
    """Whether a line continues a table, block quote or paragraph."""
    if not line.strip() or FENCE.match(line):
        return False
    table = line.lstrip().startswith("|")
    return table if kind == "table" else not table and not _ITEM.match(line)


def _fence_end(lines: list[str], start: int, marker: str) -> tuple[int, bool]:
    for j in range(start + 1, len(lines)):
        match = FENCE.match(lines[j])
        if (match and match.group(2)[0] == marker[0] and len(match.group(2)) >= len(marker)
                and not match.group(3).strip()):
            return j + 1, True
    return len(lines), False


def _list_end(lines: list[str], start: int) -> tuple[int, bool]:
    """Where a list ends: at an unindented line that is not an item, after a blank line (or at
    a table or fence line); indented lines, code fences among them, belong to the items."""
    i, closed, blank = start, True, False
    while i < len(lines):
        line = lines[i]
        indented = line.startswith((" ", "\t")) and not _ITEM.match(line)
        if not line.strip():
            blank, i = True, i + 1
        elif (fence := FENCE.match(line)) and indented:
            i, ok = _fence_end(lines, i, fence.group(2))
            closed, blank = closed and ok, False
        elif _ITEM.match(line) or indented or (not blank and _continues("para", line)):
            blank, i = False, i + 1
        else:
            break
    while i > start and not lines[i - 1].strip():
        i -= 1
    return i, closed


def _items(lines: list[str]) -> list[list[str]]:
    items: list[list[str]] = []
    for line in lines:
        if _ITEM.match(line) and (not items or len(line) - len(line.lstrip()) <= 3):
            items.append([line.strip()])
        elif items:
            items[-1].append(line)
    return items


def _item_text(item: list[str]) -> str:
    """The item's first line, its wrapped continuation joined to it, nested code blocks kept line
    by line and moved to the margin (blank lines inside them too)."""
    rest = item[1:]
    cut = min((len(line) - len(line.lstrip()) for line in rest if line.strip() and line[0] in " \t"), default=0)
    out, fence, prose = [item[0].strip()], "", True
    for raw in rest:
        line = raw[cut:] if not raw[:cut].strip() else raw.strip()
        match = FENCE.match(line)
        if fence:
            out.append(line.rstrip())
            if (match and match.group(2)[0] == fence[0] and len(match.group(2)) >= len(fence)
                    and not match.group(3).strip()):
                fence = ""
        elif match:
            out.append(line.strip())
            fence, prose = match.group(2), False
        elif line.strip():
            if prose and not _ITEM.match(line.strip()):
                out[-1] += " " + line.strip()
            else:
                out.append(line.strip())
            prose = True
    return "\n".join(out)


_BREAK = re.compile(r"(?:\s*<br\s*/?>\s*)+", re.I)  # Markdown tables break a cell's lines with HTML


def _cells(line: str) -> list[str]:
    return [_BREAK.sub(" ", cell).strip() for cell in line.strip().strip("|").split("|")]


def parse(text: str) -> Parsed:
    """The units of a section's text, in order."""
    parsed = Parsed()
    kept: list[str] = []
    for line in text.split("\n"):
        if (match := _REF_DEF.match(line)) and match.group(2).startswith(("http://", "https://", "/", "#", ".")):
            parsed.links[match.group(1).strip().lower()] = match.group(2)
        else:
            kept.append(line)
    for index, (kind, lines, complete) in enumerate(_raw_blocks("\n".join(kept))):
        units = _units(index, kind, lines, complete, parsed)
        if units and units[-1].kind != "code":
            units[-1].lead_in = ends_lead_in(units[-1].text)
        if units and units[0].kind == "code" and parsed.units and _INTRO.search(parsed.units[-1].text):
            parsed.units[-1].lead_in = parsed.units[-1].kind == "prose"  # "Run the following command."
        parsed.units.extend(units)
    return parsed


def _units(index: int, kind: str, lines: list[str], complete: bool, parsed: Parsed) -> list[Unit]:
    if kind == "code":
        return [Unit("\n".join(lines).strip("\n"), "code", index, complete=complete)]
    if kind == "list":
        items = _items(lines)
        numbered = all(NUMBERED.match(item[0]) for item in items)
        if numbered and len(items) > 1:
            parsed.numbered.add(index)
        units = []
        for n, item in enumerate(items, 1):
            text = _item_text(item)
            units.append(Unit(text, "item", index, ends_lead_in(text.split("\n")[0]) and "\n" not in text,
                              fences_balanced(text), n if numbered else 0))
        if not complete and units:
            units[-1].complete = False
        return units
    if kind == "table":
        rows = [_cells(line) for line in lines if not _TABLE_RULE.fullmatch(line)]
        if len(rows) < 2:
            return [Unit(" ".join(c for c in rows[0] if c), "prose", index)] if rows else []
        parsed.tables[index] = Table(rows[0], rows[1:])
        return [Unit(row_text(rows[0], row), "row", index) for row in rows[1:]]
    joined = " ".join(line.lstrip("> ").strip() if kind == "quote" else line for line in lines)
    if kind == "quote" or _NOTE.match(joined):
        return [Unit(joined, "note", index)]
    return [Unit(sentence, "prose", index) for sentence in _SENTENCE.split(joined) if sentence.strip()]


def row_text(header: list[str], row: list[str]) -> str:
    """A row spelled out with its column names: 'Item: Secondary, per full week; Amount: €125'."""
    return "; ".join(f"{name}: {value}" if name else value for name, value in zip(header, row) if value)


def table_text(table: Table, rows: list[list[str]]) -> str:
    """A table (or some of its rows) as Markdown, the header first."""
    lines = ["| " + " | ".join(table.header) + " |", "|" + "---|" * len(table.header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])
