"""Markdown-aware chunking.

A document is split at headings into sections; each section into blocks (paragraphs, lists,
fenced code, tables), and blocks are packed into chunks of about `size` characters. Code blocks
and tables stay whole when they fit in `2 * size`; longer ones are cut at line boundaries. A new
chunk inside the same section starts with up to `overlap` characters of the previous prose.

Chunk ids depend only on the document path, the section anchor and the chunk's position inside
its section, so they are stable across rebuilds and across edits to other sections. The text that
is embedded (and searched) is prefixed with the heading path `Title › Section › Subsection`.
"""
from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass

from rag.documents import Document

HEADING_SEP = " › "
_HEADING = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^[ \t]{0,3}(`{3,}|~{3,})")


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_path: str
    ordinal: int  # position in the document
    section: str  # heading path below the title ("" for the preamble)
    anchor: str  # GitHub-style anchor of the section heading ("" for the preamble)
    text: str  # the Markdown of the chunk
    heading_path: str  # title (unless it is only an identifier) › headings: the chunk's context

    @functools.cached_property
    def embed_text(self) -> str:
        """Heading path + text: what is embedded and full-text indexed."""
        return f"{self.heading_path}\n\n{self.text}" if self.heading_path else self.text

    @functools.cached_property
    def text_hash(self) -> str:
        """sha256 of embed_text: the key of the vector cache."""
        return hashlib.sha256(self.embed_text.encode()).hexdigest()


@dataclass
class _Section:
    headings: list[str]
    anchor: str
    lines: list[str]


def slugify(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_~\[\]()]", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def sections(doc: Document) -> list[_Section]:
    sections = [_Section([], "", [])]
    stack: list[tuple[int, str]] = []
    seen: dict[str, int] = {"": 1}  # the preamble has the anchor "": a heading with no slug gets "-1"
    fence = ""
    for line in doc.body.split("\n"):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if not fence:
                fence = marker[0] * len(marker)
            elif marker.startswith(fence):
                fence = ""
        heading = None if fence or fence_match else _HEADING.match(line)
        if not heading:
            sections[-1].lines.append(line)
            continue
        depth, name = len(heading.group(1)), heading.group(2).strip()
        base = slugify(name)
        count = seen.get(base, 0)
        seen[base] = count + 1
        anchor = base if count == 0 else f"{base}-{count}"
        while stack and stack[-1][0] >= depth:
            stack.pop()
        stack.append((depth, name))
        names = [n for d, n in stack if not (d == 1 and n.strip().lower() == doc.title.lower())]
        sections.append(_Section(names, anchor, []))
    return sections


def _blocks(lines: list[str]) -> list[tuple[str, str]]:
    """(kind, text) blocks: kind is 'code', 'table' or 'prose'."""
    blocks: list[tuple[str, str]] = []
    current: list[str] = []
    kind = "prose"
    fence = ""

    def flush() -> None:
        nonlocal current, kind
        text = "\n".join(current).strip("\n")
        if text.strip():
            blocks.append((kind, text))
        current, kind = [], "prose"

    for line in lines:
        fence_match = _FENCE.match(line)
        if fence:
            current.append(line)
            if fence_match and fence_match.group(1).startswith(fence):
                fence = ""
                flush()
            continue
        if fence_match:
            flush()
            fence = fence_match.group(1)[0] * len(fence_match.group(1))
            kind = "code"
            current.append(line)
            continue
        is_table = line.lstrip().startswith("|")
        if is_table and kind != "table":
            flush()
            kind = "table"
        elif not is_table and kind == "table":
            flush()
        if not line.strip():
            if kind == "prose":
                flush()
            elif kind == "table":
                flush()
            continue
        current.append(line)
    flush()
    return blocks


def _split_long(text: str, size: int) -> list[str]:
    """Cut an oversized block at line, then sentence, then word boundaries."""
    pieces: list[str] = []
    for unit in _units(text, size):
        if pieces and len(pieces[-1]) + 1 + len(unit) <= size:
            pieces[-1] += ("\n" if "\n" in text else " ") + unit
        else:
            pieces.append(unit)
    return pieces


def _units(text: str, size: int) -> list[str]:
    units: list[str] = []
    for line in text.split("\n"):
        if len(line) <= size:
            units.append(line)
            continue
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            while len(sentence) > size:
                cut = sentence.rfind(" ", 0, size)
                cut = cut if cut > size // 2 else size
                units.append(sentence[:cut])
                sentence = sentence[cut:].lstrip()
            if sentence:
                units.append(sentence)
    return units


def _overlap_tail(text: str, overlap: int) -> str:
    if overlap <= 0 or len(text) <= overlap:
        return "" if overlap <= 0 else text
    tail = text[-overlap:]
    space = tail.find(" ")
    return tail[space + 1:] if 0 <= space < len(tail) - 1 else tail


def context_title(title: str) -> str:
    """The title as context for every chunk of its page, or "" when it names nothing: a title
    taken from a file name that is only an identifier (`2ec3def5abce1bd5-2-2124`: hex and
    numbers, no word) would put the same meaningless tokens into every chunk's embedding and
    full-text entry."""
    return title if any(word.isalpha() for word in re.findall(r"\w+", title)) else ""


def chunk_document(doc: Document, size: int, overlap: int) -> list[Chunk]:
    chunks: list[Chunk] = []
    for section in sections(doc):
        pieces: list[str] = []
        current = ""
        last_kind = "prose"
        for kind, text in _blocks(section.lines):
            limit = 2 * size if kind in ("code", "table") else size
            parts = [text] if len(text) <= limit else _split_long(text, size)
            for part in parts:
                if current and len(current) + 2 + len(part) > size:
                    pieces.append(current)
                    carry = _overlap_tail(current, overlap) if last_kind == "prose" and kind == "prose" else ""
                    current = f"{carry}\n\n{part}" if carry else part
                else:
                    current = f"{current}\n\n{part}" if current else part
                last_kind = kind
        if current:
            pieces.append(current)
        heading_path = HEADING_SEP.join(part for part in (context_title(doc.title), *section.headings) if part)
        section_name = HEADING_SEP.join(section.headings)
        for i, text in enumerate(pieces):
            chunk_id = hashlib.sha1(f"{doc.path}\x00{section.anchor}\x00{i}".encode()).hexdigest()[:20]
            chunks.append(
                Chunk(
                    chunk_id=chunk_id,
                    doc_path=doc.path,
                    ordinal=len(chunks),
                    section=section_name,
                    anchor=section.anchor,
                    text=text,
                    heading_path=heading_path,
                )
            )
    return chunks
