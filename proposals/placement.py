"""Where a proposed text goes in a page, written in the page's own markup.

A proposal adds a person's text to one section of a docs page: it goes at the end of that
section's own text (before its next heading, whatever the level), with a blank line on each side,
so nothing around it moves. Headings are found the way each markup writes them: Markdown and MDX
(ATX `#` lines and setext underlines, outside fenced code and front matter), reStructuredText (a
title line with an underline, and an overline or not, of one punctuation character; levels in the
order the page first uses each style), AsciiDoc (`==` lines, outside delimited blocks). The text is
converted only where the markups differ: a fenced code block becomes a literal block in
reStructuredText and a `[source]` block in AsciiDoc; prose is kept as written.

A placement is refused (None: the owner gets a patch to place by hand) when it would not be safe:
a markup not listed here, a section named by no heading or by two that its path cannot tell
apart, or a section of an MDX page whose last component is still open where the text would go.
Front matter is never touched: a page's `access:` stays what it was.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath

_FAMILY = {".md": "markdown", ".markdown": "markdown", ".mdx": "markdown", ".erb": "markdown",
           ".rst": "rst", ".adoc": "asciidoc", ".asciidoc": "asciidoc"}
SEPARATOR = " › "  # how a citation writes a heading path (rag/chunking.py HEADING_SEP)

_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ADOC_HEADING = re.compile(r"^(={1,6})[ \t]+(\S.*?)[ \t]*$")
_ADOC_DELIMITER = re.compile(r"^(-{4,}|\.{4,}|={4,}|\*{4,}|_{4,}|\+{4,}|/{4,}|\|===)[ \t]*$")
_RST_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1{2,}[ \t]*$")
_ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$|\s*\[\[[^\]]*\]\]\s*$")  # `{#id}` (Markdown) and `[[id]]` (AsciiDoc)
_INLINE = re.compile(r"[`*_]")
_JSX_OPEN = re.compile(r"^\s*<([A-Z][\w.]*)(?:\s[^>]*)?(?<!/)>\s*$")
_JSX_CLOSE = re.compile(r"^\s*</([A-Z][\w.]*)>\s*$")


@dataclass(frozen=True)
class Heading:
    line: int  # index of the heading's first line (its overline for reStructuredText)
    end: int  # index of the line after the heading (after its underline)
    level: int
    text: str


def family(path: str) -> str | None:
    """`markdown`, `rst` or `asciidoc` for a page this module can write into; None for others."""
    return _FAMILY.get(PurePosixPath(path).suffix.lower())


def place(path: str, page: str, section: str, addition: str) -> str | None:
    """`page` with `addition` at the end of `section`'s own text ("" = the text before the first
    section heading), or None when that cannot be done safely (module docstring)."""
    kind = family(path)
    if kind is None or not addition.strip():
        return None
    lines = page.split("\n")
    start = _body_start(lines) if kind == "markdown" else 0
    headings = _headings(lines, start, kind)
    target = _find(headings, section)
    if target is None:
        return None
    after = [h.line for h in headings if h.line >= (target.end if target.line >= 0 else start)]
    end = after[0] if after else len(lines)
    if kind == "markdown" and _jsx_open(lines[target.end if target.line >= 0 else start:end]):
        return None
    while end > start and not lines[end - 1].strip():
        end -= 1
    block = in_markup(addition, kind).split("\n")
    tail = lines[end:]
    gap_after = [""] if tail and tail[0].strip() else []
    if not tail or not any(line.strip() for line in tail):
        tail, gap_after = [], []
    new = lines[:end] + [""] + block + gap_after + tail
    text = "\n".join(new)
    return text if text.endswith("\n") else text + "\n"


def new_page(path: str, title: str, addition: str) -> str | None:
    """A page of its own at `path`: a title heading in its markup, then the text."""
    kind = family(path)
    if kind is None or not title.strip() or not addition.strip():
        return None
    title = " ".join(title.split())
    head = {"markdown": f"# {title}", "rst": f"{title}\n{'=' * len(title)}", "asciidoc": f"= {title}"}[kind]
    return f"{head}\n\n{in_markup(addition, kind)}\n"


def in_markup(text: str, kind: str) -> str:
    """A person's text (Markdown-like, as Slack users write it) in the page's markup."""
    text = text.strip("\n")
    if kind == "markdown":
        return text
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        opened = _FENCE.match(lines[i])
        if not opened:
            out.append(lines[i])
            i += 1
            continue
        fence, language = opened.group(1), lines[i].strip()[len(opened.group(1)):].strip()
        body: list[str] = []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        i += 1  # the closing fence (or the end of the text)
        if kind == "rst":
            directive = f".. code-block:: {language}" if language else "::"
            out += [directive, ""] + [f"   {line}" if line else "" for line in body] + [""]
        else:
            out += ([f"[source,{language}]"] if language else []) + ["----", *body, "----"]
    return "\n".join(out).strip("\n")


def _body_start(lines: list[str]) -> int:
    """The first line after a YAML (`---`) or TOML (`+++`) front matter block, else 0."""
    if lines and lines[0].strip() in ("---", "+++"):
        fence = lines[0].strip()
        for i in range(1, len(lines)):
            if lines[i].strip() == fence:
                return i + 1
    return 0


def _headings(lines: list[str], start: int, kind: str) -> list[Heading]:
    if kind == "markdown":
        return _markdown_headings(lines, start)
    if kind == "rst":
        return _rst_headings(lines)
    return _asciidoc_headings(lines)


def _markdown_headings(lines: list[str], start: int) -> list[Heading]:
    found: list[Heading] = []
    fence = ""
    for i in range(start, len(lines)):
        line = lines[i]
        opened = _FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                fence = ""
            continue
        if opened:
            fence = opened.group(1)
            continue
        atx = _ATX.match(line)
        if atx:
            found.append(Heading(i, i + 1, len(atx.group(1)), atx.group(2)))
            continue
        underline = _SETEXT.match(line)
        if underline and i > start and lines[i - 1].strip() and not _ATX.match(lines[i - 1]) \
                and not (found and found[-1].end == i) and _paragraph_starts(lines, i - 1, start):
            found.append(Heading(i - 1, i + 1, 1 if underline.group(1)[0] == "=" else 2, lines[i - 1].strip()))
    return found


def _paragraph_starts(lines: list[str], i: int, start: int) -> bool:
    """A setext heading is one line of text after a blank line (else the underline continues a
    paragraph or is a thematic break)."""
    return i == start or not lines[i - 1].strip()


def _rst_headings(lines: list[str]) -> list[Heading]:
    found: list[Heading] = []
    styles: list[tuple[str, bool]] = []
    i = 0
    while i < len(lines) - 1:
        over = _RST_ADORNMENT.match(lines[i])
        if over and i + 2 < len(lines) and lines[i + 1].strip() and _RST_ADORNMENT.match(lines[i + 2]) \
                and lines[i + 2].strip()[0] == over.group(1):
            style, text, end = (over.group(1), True), lines[i + 1].strip(), i + 3
        elif lines[i].strip() and not over and (under := _RST_ADORNMENT.match(lines[i + 1])) \
                and len(lines[i + 1].strip()) >= len(lines[i].strip()) and (i == 0 or not lines[i - 1].strip()):
            style, text, end = (under.group(1), False), lines[i].strip(), i + 2
        else:
            i += 1
            continue
        if style not in styles:
            styles.append(style)
        found.append(Heading(i, end, styles.index(style) + 1, text))
        i = end
    return found


def _asciidoc_headings(lines: list[str]) -> list[Heading]:
    found: list[Heading] = []
    delimiter = ""
    for i, line in enumerate(lines):
        closing = _ADOC_DELIMITER.match(line)
        if delimiter:
            if closing and line.strip() == delimiter:
                delimiter = ""
            continue
        if closing:
            delimiter = line.strip()
            continue
        heading = _ADOC_HEADING.match(line)
        if heading:
            found.append(Heading(i, i + 1, len(heading.group(1)), heading.group(2)))
    return found


def _find(headings: list[Heading], section: str) -> Heading | None:
    """The heading a citation's section path names: its last part, told apart by the parts
    above it when several headings carry that name; a virtual heading for the preamble."""
    wanted = [_norm(part) for part in section.split(SEPARATOR) if part.strip()]
    if not wanted:  # the preamble: a page's title heading's own text, else what precedes every heading
        top = [h for h in headings if h.level == min((h.level for h in headings), default=0)]
        return top[0] if len(top) == 1 and top[0] is headings[0] else Heading(-1, -1, 0, "")
    paths: list[list[str]] = []
    stack: list[Heading] = []
    for heading in headings:
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
        paths.append([_norm(h.text) for h in stack])
    matches = [h for h, path in zip(headings, paths) if path[-1] == wanted[-1]]
    if len(matches) > 1:
        matches = [h for h, path in zip(headings, paths) if path[-len(wanted):] == wanted]
    return matches[0] if len(matches) == 1 else None


def _norm(text: str) -> str:
    return " ".join(_INLINE.sub("", _ANCHOR.sub("", text)).casefold().split())


def _jsx_open(lines: list[str]) -> bool:
    """Whether an MDX component opened in these lines is still open at their end."""
    depth = 0
    for line in lines:
        if _JSX_OPEN.match(line):
            depth += 1
        elif _JSX_CLOSE.match(line):
            depth -= 1
    return depth > 0
