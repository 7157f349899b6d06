"""Document formats: a parser per format turns a file into the one model (rag/formats/model.py)
that chunking, the extractive answerer and citations read; the registry picks the parser."""
from __future__ import annotations

from rag.formats.model import Block, Format, Parsed, Section, Source, markdown_of
from rag.formats.registry import FORMATS, default_include, format_for, suffixes

__all__ = ["FORMATS", "Block", "Format", "Parsed", "Section", "Source", "default_include", "format_for",
           "markdown_of", "suffixes"]
