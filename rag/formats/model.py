"""The one document model every format's parser produces, and that chunking, the extractive
answerer and citations read: a title, sections (heading path, anchor) and typed blocks.

A block's `text` is normalised Markdown (a list as `- item` / `1. item` lines, a table as pipe
rows, code as a fenced block with its language, an admonition as `**Note:** text`): the one
rendering the span parser, the quotes and the embeddings read, whatever the source format was.
No markup of the source format (RST underlines, `::`, AsciiDoc attributes, JSX tags, fence meta)
ever reaches it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

BlockKind = Literal["prose", "list", "table", "code", "admonition"]


@dataclass(frozen=True)
class Block:
    kind: BlockKind
    text: str  # normalised Markdown (see the module docstring)
    language: str = ""  # a code block's language ("" when unknown)
    title: str = ""  # an admonition's kind or title ("Note", "Warning: breaking change"), a block title


@dataclass(frozen=True)
class Section:
    headings: tuple[str, ...]  # heading path below the document title; () for the preamble
    anchor: str  # the rendered page's id for the heading: an explicit id first, else the format's slug
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class Parsed:
    """What a parser makes of one file's text (front matter already removed)."""

    title: str  # the format's own title ("" when the file has none: the caller falls back)
    sections: tuple[Section, ...]  # in document order; the first is the preamble (maybe empty)
    includes: tuple[str, ...] = ()  # docs-root-relative paths pulled in (snippets, partials, include::)
    meta: dict[str, str] = field(default_factory=dict)  # format-level fields (RST :orphan:, AsciiDoc attrs)


# Reads another file of the docs tree for an include, by docs-root-relative POSIX path: its text,
# or None when it does not exist, lies outside the docs root or cannot be read.
ReadFile = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Source:
    path: str  # POSIX path relative to the docs root
    text: str  # the file's text without front matter, LF line endings
    meta: dict[object, object]  # the front matter (already validated for the common fields)
    read: ReadFile  # for includes; resolves only inside the docs root


Parser = Callable[[Source], Parsed]


class TemplatePage(ValueError):
    """Raised by a parser for a page that is mostly template (a loop over site data): skipped,
    with this reason, instead of indexed as the little text left around the loop."""


def every_file_a_page(path: str) -> bool:
    return True


@dataclass(frozen=True)
class Format:
    name: str  # "markdown", "mdx", "rst", "asciidoc", "text"
    suffixes: tuple[str, ...]  # lower-case, with the dot: (".rst",)
    parse: Parser
    # Whether a file of this format is a page of its own; one that is not (an Antora partial) is
    # out of scope like an excluded file, and indexed only where a page includes it.
    is_page: Callable[[str], bool] = every_file_a_page


def admonition_block(name: str, inner: list[Block]) -> Block:
    """An admonition as every parser writes one: `**Note:** text` (`**Warning: Title:** text`),
    its body on the next lines when it opens with a list, code or a quote; `title` is the name."""
    label = f"**{name}**" if name[-1:] in ".:?!" else f"**{name}:**"
    body = "\n\n".join(block.text for block in inner if block.text)
    inline = bool(inner) and inner[0].kind == "prose" and not inner[0].text.startswith(">")
    return Block("admonition", f"{label} {body}" if inline else f"{label}\n\n{body}" if body else label, title=name)


def markdown_of(sections: tuple[Section, ...]) -> str:
    """The whole document as normalised Markdown (headings as ATX lines): the body the span
    parser and the procedure finder read."""
    out: list[str] = []
    for section in sections:
        if section.headings:
            out.append("#" * (len(section.headings) + 1) + " " + section.headings[-1])
        out.extend(block.text for block in section.blocks)
    return "\n\n".join(out)
