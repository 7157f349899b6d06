"""reStructuredText, as Sphinx writes it: the format's registration. The parser
(rst_document.py and the rst_* modules) loads docutils, so it is imported on the first `.rst`
file, not with the registry that the settings and `docsbot --help` import."""
from __future__ import annotations

from rag.formats.model import Format, Parsed, Source

__all__ = ["FORMAT", "parse"]


def parse(source: Source) -> Parsed:
    from rag.formats.rst_document import parse as parse_rst

    return parse_rst(source)


FORMAT = Format("rst", (".rst",), parse)
