"""RST inline markup as normalised Markdown text: the inline children of a doctree node (a
paragraph, a title, a term, a table cell) as one line, literals and the default role as inline
code, external links as `[text](url)`, a titleless `:ref:` as its section's title; `code_span`,
`SPACE` and `SKIP` are shared with the block renderer (rst_blocks.py). The roles themselves were
turned into nodes at parse time (rst_sphinx.py); this reads what they left.
"""
from __future__ import annotations

import re

from docutils import nodes

from rag.formats.rst_nodes import label_ref


SPACE = re.compile(r"\s+")


def code_span(text: str) -> str:
    text = SPACE.sub(" ", text).strip()
    if not text:
        return ""
    ticks = "``" if "`" in text else "`"
    pad = " " if "`" in text else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


SKIP = (nodes.comment, nodes.target, nodes.substitution_definition, nodes.system_message,
        nodes.raw, nodes.transition, nodes.pending, nodes.image, nodes.docinfo, nodes.decoration,
        nodes.footnote_reference, nodes.citation_reference)


class InlineRenderer:
    """The inline text of one doctree's nodes (a titleless `:ref:` is looked up in the doctree)."""

    def __init__(self, document: nodes.document) -> None:
        self.document = document

    def text(self, node: nodes.Node) -> str:
        return SPACE.sub(" ", self._inline(node)).strip()

    def _inline(self, node: nodes.Node) -> str:
        if isinstance(node, nodes.Text):
            return node.astext()
        if isinstance(node, SKIP):
            return ""
        if isinstance(node, (nodes.literal, nodes.math)):
            return code_span(node.astext())
        if isinstance(node, nodes.title_reference):
            return code_span(node.astext())
        if isinstance(node, nodes.reference):
            return self._reference(node)
        if isinstance(node, label_ref):
            return self._label(str(node["label"]))
        if isinstance(node, nodes.problematic):
            return re.sub(r"^\|[\w -]+\|$", "", node.astext().strip("`_:"))
        return "".join(self._inline(child) for child in node.children)  # type: ignore[attr-defined]

    def _reference(self, node: nodes.reference) -> str:
        text = "".join(self._inline(child) for child in node.children).strip()
        uri = str(node.get("refuri", ""))
        if uri.startswith(("http://", "https://")) and text and text != uri:
            return f"[{text}]({uri})"
        return text or uri

    def _label(self, label: str) -> str:
        """A `:ref:` without a title names a label: its section's title when it is in this doc."""
        ident = self.document.nameids.get(nodes.fully_normalize_name(label))
        target = self.document.ids.get(ident) if ident else None
        if isinstance(target, nodes.section) and target.children:
            return self.text(target[0])
        return label
