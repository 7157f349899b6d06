"""reStructuredText (as Sphinx writes it) into the shared document model, with docutils.

docutils parses the text; Sphinx's roles and directives, and any other unknown name found in the
text, are registered beforehand as generic ones, so nothing is ever reported as an error and their
text survives (no Sphinx needed). The doctree is then walked into sections and normalised Markdown
blocks (see rag/formats/model.py).

Settings follow Sphinx's, which keeps the top section a section (doctitle_xform off, so a lone
subsection is never promoted to a subtitle) and numbers duplicate ids `id1`, `id2`. A section's
anchor is its docutils `ids[0]`: the slug of its title (`make_id`), which is the `id` Sphinx
renders on the `<section>`; an explicit `.. _label:` above it only adds a second id (a `<span>`).

Literal blocks after `::` take the language of the last `.. highlight::` (or "" when none).
Single backticks (the default role) render as inline code, as in most Sphinx projects. Admonitions
are written as the Markdown parsers write them: `**Note:** text`, the block titled `Note`; a
`versionadded` and the like as prose `New in version 2.0: text`; a Sphinx object (`py:data`,
`function` …) as prose led by its signature in code; tabs as a bold `**Label:**` line before their
content; `toctree`, autodoc, `index` and other directives that show nothing are dropped.

The pieces: docutils' settings and the Sphinx roles and directives (rst_sphinx.py), the names and
node types they share with the renderer (rst_nodes.py), includes and `:doc:` titles read from
other files (rst_includes.py), the doctree as blocks (rst_blocks.py) and inline text
(rst_inline.py); this module parses a file and walks its sections. rst.py registers the format
and imports this module on the first `.rst` file: docutils is not loaded with the registry.
"""
from __future__ import annotations

import copy

from docutils import nodes
from docutils.core import publish_doctree

from rag.formats.model import Parsed, Section, Source
from rag.formats.rst_blocks import Renderer
from rag.formats.rst_includes import Context
from rag.formats.rst_inline import SPACE
from rag.formats.rst_sphinx import SETTINGS, register, register_sphinx

__all__ = ["parse"]


def _sections(renderer: Renderer, document: nodes.document) -> tuple[str, list[Section]]:
    """The title (the first top-level section's, as Sphinx takes it) and the sections in order:
    the preamble (what precedes the title, and the title section's own body) first."""
    top = [c for c in document.children if isinstance(c, nodes.section)]
    if not top:
        return "", [Section((), "", tuple(renderer.blocks(document.children)))]
    first = top[0]
    before = document.children[: document.children.index(first)]
    preamble = renderer.blocks(before) + renderer.blocks(first.children)
    out = [Section((), "", tuple(preamble))]
    for child in first.children:
        if isinstance(child, nodes.section):
            _walk(renderer, child, (), out)
    for section in top[1:]:
        _walk(renderer, section, (), out)
    return SPACE.sub(" ", first[0].astext()).strip(), out


def _walk(renderer: Renderer, section: nodes.section, path: tuple[str, ...], out: list[Section]) -> None:
    heading = SPACE.sub(" ", section[0].astext()).strip()
    here = (*path, heading)
    ids = section.get("ids", [])
    out.append(Section(here, str(ids[0]) if ids else nodes.make_id(heading), tuple(renderer.blocks(section.children))))
    for child in section.children:
        if isinstance(child, nodes.section):
            _walk(renderer, child, here, out)


def _meta(document: nodes.document) -> dict[str, str]:
    """Document-level fields (`:orphan:`, `:tocdepth:` …): the docinfo docutils collected."""
    meta: dict[str, str] = {}
    for info in document.findall(nodes.docinfo):
        for child in info.children:
            if isinstance(child, nodes.field):
                meta[child[0].astext().strip().lower()] = child[1].astext().strip()
            elif isinstance(child, nodes.Element):
                meta[type(child).__name__] = child.astext().strip()
    return meta


def parse(source: Source) -> Parsed:
    """One RST file into the model. What docutils cannot read raises: the file is skipped with
    that reason (rag/documents.py), never indexed empty without a word."""
    register(source.text)
    context = Context(source.path, source.read)
    settings = copy.copy(SETTINGS)
    settings.docsbot = context
    document = publish_doctree(source.text, source_path=source.path, settings=settings)
    renderer = Renderer(document)
    title, sections = _sections(renderer, document)
    meta = _meta(document)
    return Parsed(title, tuple(sections), tuple(dict.fromkeys(context.includes)), meta)


register_sphinx()
