"""The registered formats: which parser reads a file, by its lower-cased suffix.

A suffix no format claims is read as plain text (rag/formats/text.py): a file someone chose to
include (`**/*.conf`, a README without a suffix) is still indexed, and nothing in it is taken for
markup it may not be (a `# comment` line is no heading).
"""
from __future__ import annotations

from pathlib import PurePosixPath

from rag.formats import asciidoc, erb, markdown, mdx, rst, text
from rag.formats.model import Format


FORMATS: tuple[Format, ...] = (markdown.FORMAT, mdx.FORMAT, rst.FORMAT, asciidoc.FORMAT, erb.FORMAT, text.FORMAT)

_BY_SUFFIX = {suffix: fmt for fmt in FORMATS for suffix in fmt.suffixes}


def format_for(path: str) -> Format:
    """The format of a file, by its suffix (case-insensitive); plain text for any other."""
    return _BY_SUFFIX.get(PurePosixPath(path).suffix.lower(), text.FORMAT)


def suffixes() -> tuple[str, ...]:
    """Every suffix a format reads, in registry order: `.md`, `.markdown`, `.mdx`, `.rst`, ..."""
    return tuple(_BY_SUFFIX)


def default_include() -> tuple[str, ...]:
    """The include globs of the default settings: `**/*.md` and the like for every suffix."""
    return tuple(f"**/*{suffix}" for suffix in suffixes())
