"""Chunking over the document model: a document's sections (rag/formats/model.py), their typed
blocks packed into chunks of about `size` characters.

Code blocks and tables stay whole when they fit in `2 * size`, other blocks when they fit in
`size`; longer blocks are cut at list items (a list is one block), then at lines. A new chunk
inside the same section starts with up to `overlap` characters of the previous prose (a list and
an admonition are prose here), unless that tail holds a piece of a code fence.

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
from rag.formats import Block, Section
from rag.formats.anchors import slugify as slugify  # the Markdown anchor, importable from here as before
from rag.terms import identifier_words

HEADING_SEP = " › "
_WHOLE = ("code", "table")  # kept whole up to 2 * size, never an overlap's source or target
_ITEM_START = re.compile(r"\n(?=- |\d+\. )")  # a top-level item of a list block (rag/formats/markdown.py)
_FENCE = re.compile(r"^[ \t]*(?:`{3}|~{3})", re.M)


@dataclass(frozen=True)
class Chunk:
    chunk_id: str
    doc_path: str
    ordinal: int  # position in the document
    section: str  # heading path below the title ("" for the preamble)
    anchor: str  # the section heading's anchor on the rendered page ("" for the preamble)
    text: str  # the normalised Markdown of the chunk
    heading_path: str  # title (unless it is only an identifier) › headings: the chunk's context

    @functools.cached_property
    def embed_text(self) -> str:
        """Heading path + text: what is embedded and full-text indexed."""
        return f"{self.heading_path}\n\n{self.text}" if self.heading_path else self.text

    @functools.cached_property
    def search_text(self) -> str:
        """What the full-text index holds: embed_text, and the words of the camel-case identifiers
        in its heading path ("etcdMembersDown" is also "etcd Members Down"). Only there: the same
        words taken from the body too lifted the dev suite's MRR a little but let one more
        unanswerable question through the answerability gate."""
        words = identifier_words(self.heading_path)
        return f"{self.embed_text}\n\n{words}" if words else self.embed_text

    @functools.cached_property
    def text_hash(self) -> str:
        return text_hash(self.embed_text)


def text_hash(embed_text: str) -> str:
    """sha256 of a chunk's embed_text: the key of the vector cache (the text alone, not its
    document's path, so indexes of the same pages can lend each other their vectors)."""
    return hashlib.sha256(embed_text.encode()).hexdigest()


def sections(doc: Document) -> tuple[Section, ...]:
    """The sections chunks are made of: the document's, as its format's parser made them."""
    return doc.sections


def _split_long(text: str, size: int, kind: str = "prose") -> list[str]:
    """Cut an oversized block at line, then sentence, then word boundaries; a list first at its
    items (an item with what is indented under it, code included, stays whole if it fits)."""
    pieces: list[str] = []
    items = _ITEM_START.split(text) if kind == "list" else []
    units = [unit for item in items for unit in ([item] if len(item) <= size else _units(item, size))] if items \
        else _units(text, size)
    for unit in units:
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
        heading_path = HEADING_SEP.join(part for part in (context_title(doc.title), *section.headings) if part)
        section_name = HEADING_SEP.join(section.headings)
        for i, text in enumerate(_pack(section.blocks, size, overlap)):
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


def _pack(blocks: tuple[Block, ...], size: int, overlap: int) -> list[str]:
    """A section's blocks as chunk texts of about `size` characters."""
    pieces: list[str] = []
    current = ""
    last_kind = "prose"
    for block in blocks:
        whole = block.kind in _WHOLE
        limit = 2 * size if whole else size
        parts = [block.text] if len(block.text) <= limit else _split_long(block.text, size, block.kind)
        for part in parts:
            if current and len(current) + 2 + len(part) > size:
                pieces.append(current)
                carry = _overlap_tail(current, overlap) if last_kind not in _WHOLE and not whole else ""
                if _FENCE.search(carry):  # a piece of a code block's end would open or close a fence
                    carry = ""
                current = f"{carry}\n\n{part}" if carry else part
            else:
                current = f"{current}\n\n{part}" if current else part
            last_kind = block.kind
    if current:
        pieces.append(current)
    return pieces
