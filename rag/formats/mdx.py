"""MDX (`.mdx`, Docusaurus): the Markdown parser with the same dialects, and no indented code
blocks: MDX has none, so a component's children indented under its tag stay prose."""
from __future__ import annotations

from rag.formats.markdown import parse_markdown
from rag.formats.model import Format, Parsed, Source


def parse_mdx(source: Source) -> Parsed:
    return parse_markdown(source, indented_code=False)


FORMAT = Format("mdx", (".mdx",), parse_mdx)
