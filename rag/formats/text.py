"""Plain text (`.txt`, and any suffix no format claims): one preamble section of paragraphs
(split at blank lines), with no title of its own: nothing in it is read as markup."""
from __future__ import annotations

import re

from rag.formats.model import Block, Format, Parsed, Section, Source

_BLANK_LINES = re.compile(r"\n[ \t]*\n")


def parse_text(source: Source) -> Parsed:
    paragraphs = (part.strip("\n") for part in _BLANK_LINES.split(source.text))
    blocks = tuple(Block("prose", part) for part in paragraphs if part.strip())
    return Parsed("", (Section((), "", blocks),))


FORMAT = Format("text", (".txt",), parse_text)
