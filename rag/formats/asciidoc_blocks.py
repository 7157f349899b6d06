"""AsciiDoc block structure (after the preprocessor): sections, paragraphs, delimited blocks
and block metadata, as blocks of normalised Markdown; lists are in asciidoc_lists.py, tables in
asciidoc_tables.py, the line patterns in asciidoc_syntax.py. See rag/formats/asciidoc.py for the
supported subset.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from rag.formats.asciidoc_inline import Inline, fence, subs_attributes
from rag.formats.asciidoc_lists import ListReader
from rag.formats.asciidoc_syntax import (
    ADMONITION_PARAGRAPH,
    ADMONITIONS,
    ANCHOR,
    ATTRLIST,
    BLOCK_MACRO,
    BREAK,
    CALLOUTS,
    ENTRY,
    HEADING,
    INVALID_ID,
    OLIST,
    TITLE,
    Heading,
    Meta,
    dedent,
    delimiter_kind,
    is_block_start,
    list_item,
    read_delimited,
)
from rag.formats.asciidoc_tables import table
from rag.formats.model import Block, admonition_block


@dataclass
class Document:
    """What the blocks share: attributes (as entries are read), inline renderer, ids so far."""

    inline: Inline
    locked: set[str] = field(default_factory=set)  # set by antora.yml without `@`: not overridable
    ids: dict[str, str] = field(default_factory=dict)  # id → title (for `<<id>>`)

    @property
    def attributes(self) -> dict[str, str]:
        return self.inline.attributes

    def entry(self, match: re.Match[str], value: str) -> None:
        name = match.group(2).lower()
        if name in self.locked:
            return
        if match.group(1) or match.group(3):
            self.attributes.pop(name, None)
        else:
            self.attributes[name] = subs_attributes(value, self.attributes)

    def section_id(self, title: str, explicit: str) -> str:
        """The explicit id, else Asciidoctor's: idprefix + lower-cased title without invalid
        characters, runs of space/`.`/`-` (and the separator) as one idseparator; `_2`… on a clash."""
        if explicit or "sectids" not in self.attributes:
            return self.register(explicit, title) if explicit else ""
        prefix = self.attributes.get("idprefix", "_")
        sep = self.attributes.get("idseparator", "_")[:1]
        ident = prefix + INVALID_ID.sub("", title.lower())
        if not sep:
            ident = ident.replace(" ", "")
        else:
            runs = " .-" if sep in "-." else f" {sep}.-"
            ident = re.sub(f"[{re.escape(runs)}]+", sep, ident)
            ident = ident[:-1] if ident.endswith(sep) else ident
            ident = ident[1:] if not prefix and ident.startswith(sep) else ident
        if ident in self.ids:
            n = 2
            while f"{ident}{sep}{n}" in self.ids:
                n += 1
            ident = f"{ident}{sep}{n}"
        return self.register(ident, title)

    def register(self, ident: str, title: str) -> str:
        if ident:
            self.ids.setdefault(ident, title)
        return ident


class BlockParser:
    """Parses lines into Heading and Block items; `top` allows sections (not inside blocks)."""

    def __init__(self, doc: Document) -> None:
        self.doc = doc

    def text(self, raw: str, plain: bool = False) -> str:
        return self.doc.inline.text(raw, plain)

    def parse(self, lines: list[str], top: bool = False) -> list[Block | Heading]:
        out: list[Block | Heading] = []
        meta, i = Meta(), 0
        while i < len(lines):
            line = lines[i]
            kind = delimiter_kind(line)
            if not line.strip() or (line.startswith("//") and kind != "comment"):
                i += 1
            elif entry := ENTRY.match(line):
                i = self._entry(lines, i, entry)
            elif anchor := ANCHOR.match(line):
                meta.id, i = anchor.group(1), i + 1
                if anchor.group(2):  # a reftext: what `<<id>>` shows (else the block's title)
                    self.doc.register(meta.id, self.text(anchor.group(2), plain=True))
            elif ATTRLIST.match(line):
                meta.add(line.strip()[1:-1])
                i += 1
            elif (title := TITLE.match(line)) and not OLIST.match(line):
                meta.title, i = self.text(title.group(1)), i + 1
            else:
                items, i = self._block(lines, i, meta, top)
                out.extend(items)
                self.doc.register(meta.id, meta.title)  # `<<id>>` to a block shows its title
                meta = Meta()
        return out

    def _entry(self, lines: list[str], i: int, entry: re.Match[str]) -> int:
        value = entry.group(4) or ""
        while value.endswith((" \\", " +")) and i + 1 < len(lines):  # a value wrapped onto more lines
            i += 1
            value = value[:-2] + " " + lines[i].strip()
        self.doc.entry(entry, value)
        return i + 1

    def _block(self, lines: list[str], i: int, meta: Meta, top: bool) -> tuple[list[Block | Heading], int]:
        line = lines[i]
        if heading := HEADING.match(line):
            title = self.text(heading.group(2), plain=True)
            if top and meta.style not in ("discrete", "float"):
                return [Heading(len(heading.group(1)) - 1, title, self.doc.section_id(title, meta.id))], i + 1
            self.doc.register(meta.id, title)
            return [Block("prose", title)], i + 1
        if kind := delimiter_kind(line):
            inner, end = read_delimited(lines, i)
            return list(self._delimited(kind, inner, meta, line)), end
        if BLOCK_MACRO.match(line) or BREAK.match(line):
            return [], i + 1
        if list_item(line):
            blocks, end = ListReader(self).read(lines, i, meta)
            return list(blocks), end
        paragraph, end = self.paragraph_lines(lines, i)
        return list(self._paragraph(paragraph, meta)), end

    # paragraphs ------------------------------------------------------------------------------

    def paragraph_lines(self, lines: list[str], i: int, in_list: bool = False) -> tuple[list[str], int]:
        """A paragraph ends at a blank line or a block attribute line or delimiter (and in a
        list at an item or `+`); line comments inside it are dropped."""
        out = [lines[i]]
        i += 1
        literal = lines[i - 1][:1] in (" ", "\t")
        while i < len(lines) and lines[i].strip():
            line = lines[i]
            if not literal and (is_block_start(line) or (in_list and (line.strip() == "+" or list_item(line)))):
                break
            if not line.startswith("//"):
                out.append(line)
            i += 1
        return out, i

    def inline_lines(self, lines: list[str], hardbreaks: bool = False) -> str:
        """Lines of one paragraph as inline text: a trailing ` +` (or %hardbreaks) keeps the break."""
        joined = ""
        for line in lines:
            line = line.strip()
            if line.endswith(" +") or line == "+":
                joined += line[:-1].rstrip() + "\n"
            else:
                joined += line + ("\n" if hardbreaks else " ")
        return "\n".join(self.text(part) for part in joined.strip().split("\n"))

    def _paragraph(self, lines: list[str], meta: Meta) -> list[Block]:
        style = meta.style
        if style in ("comment", "pass"):
            return []
        if style in ("source", "listing", "literal") or (not style and len(meta.positional) > 1):
            return [self._code(lines, meta, "listing" if style != "literal" else "literal")]
        if style == "stem" or style in ("latexmath", "asciimath"):
            return [Block("code", fence("\n".join(lines), "math"), "math")]
        if lines[0][:1] in (" ", "\t") and not style:
            return [self.titled(Block("code", fence("\n".join(dedent(lines)), ""), ""), meta)]
        if (admonition := ADMONITION_PARAGRAPH.match(lines[0])) and not style:
            lines = [admonition.group(2), *lines[1:]]
            style = admonition.group(1)
        hard = "hardbreaks" in meta.options or style == "verse" or "hardbreaks-option" in self.doc.attributes
        text = self.inline_lines(lines, hard)
        if style in ADMONITIONS:
            return [self._admonition(style, [Block("prose", text)], meta)] if text else []
        return [self.titled(Block("prose", text), meta)] if text else []

    def _admonition(self, style: str, inner: list[Block], meta: Meta) -> Block:
        label = ADMONITIONS[style]
        return admonition_block(f"{label}: {meta.title}" if meta.title else label, inner)

    def titled(self, block: Block, meta: Meta) -> Block:
        """A block title: kept as the block's title, and (but for code, whose text must open
        with its fence) as a bold lead line."""
        if not meta.title:
            return block
        if block.kind == "code":
            return Block(block.kind, block.text, block.language, meta.title)
        return Block(block.kind, f"**{meta.title}**\n{block.text}", block.language, meta.title)

    # delimited blocks ---------------------------------------------------------------------------

    def _delimited(self, kind: str, inner: list[str], meta: Meta, opening: str) -> list[Block]:
        style = meta.style
        if kind == "comment" or style == "comment" or (kind == "pass" and style != "stem"):
            return []
        if kind == "pass" or style == "stem":
            return [Block("code", fence("\n".join(inner), "math"), "math")]
        if kind in ("listing", "literal", "fenced") or style in ("source", "listing", "literal"):
            return [self._code(inner, meta, kind, opening)]
        if kind == "table":
            return [self.titled(table(self, inner, meta, opening.strip()[0]), meta)]
        body = [b for b in self.parse(inner) if isinstance(b, Block)]
        if style in ADMONITIONS:
            return [self._admonition(style, body, meta)] if body else []
        if style == "verse":
            return [self.titled(Block("prose", self.inline_lines(inner, True)), meta)]
        if meta.title and body:
            return [Block("prose", f"**{meta.title}**", title=meta.title), *body]
        return body

    def _code(self, lines: list[str], meta: Meta, kind: str, opening: str = "") -> Block:
        language = ""
        if kind == "fenced":
            language = opening.strip()[3:].strip().split(" ")[0]
        elif meta.style == "source" or (not meta.style and len(meta.positional) > 1):
            language = meta.positional[1] if len(meta.positional) > 1 and meta.positional[1] else ""
            language = language or self.doc.attributes.get("source-language", "")
        code = "\n".join(CALLOUTS.sub("", line) for line in lines)
        subs = meta.named.get("subs", "")
        if re.search(r"(?<![-\w])attributes|normal", subs) and "-attributes" not in subs:
            code = subs_attributes(code, self.doc.attributes)
        if meta.named.get("indent") == "0":
            code = "\n".join(dedent(code.split("\n")))
        return self.titled(Block("code", fence(code, language), language), meta)
