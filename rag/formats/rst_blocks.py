"""The doctree as blocks of normalised Markdown (see rag/formats/model.py): paragraphs, lists,
definition / field / option lists as `term: definition` lines, tables as pipe tables, literal and
code blocks fenced with their language, admonitions as `**Note:** text`, and the Sphinx directives
by family (code, version notes, object descriptions, tabs). One Renderer walks one doctree in
document order, which is what lets a `.. highlight::` set the language of the literal blocks after
it; the inline text inside the blocks comes from rst_inline.py.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from docutils import nodes

from rag.formats.model import Block, admonition_block
from rag.formats.rst_inline import SKIP, SPACE, InlineRenderer, code_span
from rag.formats.rst_nodes import ADMONITIONS, VERSIONS, directive_node


_MARKER = re.compile(r"^\s*(?:-|\d+\.)\s+")


def _fence(code: str, language: str) -> str:
    ticks = "```"
    while ticks in code:
        ticks += "`"
    return f"{ticks}{language}\n{code.strip(chr(10))}\n{ticks}"


def _indent(text: str, by: str) -> str:
    return "\n".join(by + line if line.strip() else line for line in text.split("\n"))


class Renderer:
    """Walks one doctree into blocks; keeps the `.. highlight::` language in document order."""

    def __init__(self, document: nodes.document) -> None:
        self.inline: Callable[[nodes.Node], str] = InlineRenderer(document).text
        self.highlight = ""

    # blocks -----------------------------------------------------------------------------------

    def blocks(self, children: Iterable[nodes.Node]) -> list[Block]:
        out: list[Block] = []
        for child in children:
            if not isinstance(child, nodes.section):
                out.extend(self.block(child))
        return out

    def block(self, node: nodes.Node) -> list[Block]:
        if isinstance(node, SKIP) or isinstance(node, nodes.title):
            return []
        if isinstance(node, directive_node):
            return self.directive(node)
        if isinstance(node, nodes.paragraph):
            text = self.inline(node)
            return [Block("prose", text)] if text else []
        if isinstance(node, (nodes.bullet_list, nodes.enumerated_list)):
            return [Block("list", self.list_text(node))]
        if isinstance(node, nodes.literal_block):
            language = " ".join(c for c in node.get("classes", []) if c != "code") or self.highlight
            return [Block("code", _fence(node.astext(), language), language)]
        if isinstance(node, nodes.doctest_block):
            return [Block("code", _fence(node.astext(), "pycon"), "pycon")]
        if isinstance(node, nodes.math_block):
            return [Block("code", _fence(node.astext(), "math"), "math")]
        if isinstance(node, (nodes.definition_list, nodes.field_list, nodes.option_list)):
            return self.terms(node)
        if isinstance(node, nodes.table):
            return [self.table(node)]
        if isinstance(node, nodes.Admonition):
            return [self.admonition(node)]
        if isinstance(node, nodes.line_block):
            return [Block("prose", self.lines(node))]
        if isinstance(node, (nodes.rubric, nodes.caption, nodes.attribution, nodes.legend)):
            text = self.inline(node) if not isinstance(node, nodes.legend) else ""
            return [Block("prose", text)] if text else self.blocks(node.children)
        if isinstance(node, (nodes.footnote, nodes.citation)):
            body = self.blocks(node.children[1:])
            return [Block("prose", f"[{node[0].astext()}] " + " ".join(b.text for b in body))] if body else []
        if isinstance(node, nodes.TextElement):
            text = self.inline(node)
            return [Block("prose", text)] if text else []
        if isinstance(node, nodes.Element):
            title = node.next_node(nodes.title) if isinstance(node, (nodes.topic, nodes.sidebar)) else None
            lead = [Block("prose", self.inline(title))] if title is not None and title.parent is node else []
            return lead + self.blocks(node.children)
        return []

    def flat(self, blocks: list[Block]) -> str:
        """Blocks nested in a list item, as one text."""
        return "\n\n".join(block.text for block in blocks if block.text)

    def list_text(self, node: nodes.Element) -> str:
        ordered = isinstance(node, nodes.enumerated_list)
        start = int(node.get("start", 1)) if ordered else 1
        lines = []
        for n, item in enumerate(node.children, start):
            marker = f"{n}. " if ordered else "- "
            body = self.flat(self.blocks(item.children))  # type: ignore[attr-defined]
            first, _, rest = body.partition("\n")
            lines.append(marker + first + ("\n" + _indent(rest, "  ") if rest else ""))
        return "\n".join(lines)

    def terms(self, node: nodes.Element) -> list[Block]:
        """Definition, field and option lists as `term: definition` lines; a definition holding
        more than one paragraph keeps the rest as blocks after its line."""
        out: list[Block] = []
        lines: list[str] = []
        for item in node.children:
            term, body = self._term(item)
            if body and body[0].kind == "prose":
                lines.append(f"{term}: {body[0].text}" if term else body[0].text)
                body = body[1:]
            elif term:
                lines.append(term + (":" if body else ""))
            if body:
                out.append(Block("prose", "\n".join(lines)))
                out.extend(body)
                lines = []
        if lines:
            out.append(Block("prose", "\n".join(lines)))
        return out

    def _term(self, item: nodes.Node) -> tuple[str, list[Block]]:
        if isinstance(item, nodes.option_list_item):
            options = ", ".join(self.inline(o) for o in item[0].children)
            return code_span(options), self.blocks(item[1].children) if len(item.children) > 1 else []
        heads = [c for c in item.children if isinstance(c, (nodes.term, nodes.field_name, nodes.classifier))]  # type: ignore[attr-defined]
        bodies = [c for c in item.children if isinstance(c, (nodes.definition, nodes.field_body))]  # type: ignore[attr-defined]
        term = " : ".join(self.inline(h) for h in heads)
        return term, [b for body in bodies for b in self.blocks(body.children)]

    def lines(self, node: nodes.Element, depth: int = 0) -> str:
        out = []
        for child in node.children:
            if isinstance(child, nodes.line_block):
                out.append(self.lines(child, depth + 1))
            else:
                out.append("  " * depth + self.inline(child))
        return "\n".join(out)

    def table(self, node: nodes.table) -> Block:
        group = node.next_node(nodes.tgroup)
        width = int(group.get("cols", 0)) if group is not None else 0
        head = [self._row(r, width) for r in node.findall(nodes.row) if isinstance(r.parent, nodes.thead)]
        body = [self._row(r, width) for r in node.findall(nodes.row) if isinstance(r.parent, nodes.tbody)]
        rows = (head[:1] or [[""] * width]) + head[1:] + body
        width = max((len(r) for r in rows), default=0)
        text = [_pipe_row(rows[0], width), "|" + "---|" * width] + [_pipe_row(r, width) for r in rows[1:]]
        title = node.next_node(nodes.title)
        caption = self.inline(title) if title is not None and title.parent is node else ""
        return Block("table", (f"**{caption}**\n" if caption else "") + "\n".join(text), title=caption)

    def _row(self, row: nodes.row, width: int) -> list[str]:
        cells: list[str] = []
        for entry in row.children:
            cells.append(self.cell(entry))  # type: ignore[arg-type]
            cells.extend([""] * int(entry.get("morecols", 0)))  # type: ignore[attr-defined]
        return cells

    def cell(self, entry: nodes.Element) -> str:
        parts = []
        for block in self.blocks(entry.children):
            if block.kind == "code":
                parts.append(code_span(_unfence(block.text)))
            elif block.kind == "list":
                items = (_MARKER.sub("", line) for line in block.text.split("\n") if line.strip())
                parts.append("; ".join(items))
            else:
                parts.append(SPACE.sub(" ", block.text))
        return " ".join(parts).replace("|", "\\|")

    def admonition(self, node: nodes.Element) -> Block:
        title = node.next_node(nodes.title)
        named = self.inline(title) if title is not None and title.parent is node else ""
        kind = type(node).__name__.capitalize()
        label = named if isinstance(node, nodes.admonition) else kind
        return admonition_block(label or "Note", self.blocks(node.children))

    # directives --------------------------------------------------------------------------------

    def directive(self, node: directive_node) -> list[Block]:
        name, family, argument = str(node["name"]), str(node["family"]), str(node["argument"])
        options: dict[str, Any] = node["options"]
        if name.endswith("highlight"):
            self.highlight = argument.split()[0] if argument else ""
        if family == "drop":
            return []
        if family == "code":
            return [self._code(node, name, argument, options)]
        shown = self.inline(node[0]) if node.children else ""
        body = self.blocks(node.children[1:])
        if family == "admonition":
            inner = ([Block("prose", shown)] if shown else []) + body
            return [admonition_block(ADMONITIONS[name.split(":")[-1]], inner)] if inner else []
        if family == "version":
            return self._version(name, argument, shown, body)
        if family == "object":
            return self._object(argument, body)
        if family == "tab":  # as the Markdown parsers write a tab: its label, bold, then its content
            return ([Block("prose", f"**{shown}:**")] if shown else []) + body
        lead = [Block("prose", shown)] if shown and name not in ("only", "ifconfig") else []
        return lead + body


    def _code(self, node: directive_node, name: str, argument: str, options: dict[str, Any]) -> Block:
        language = argument.split()[0] if argument and name not in ("productionlist",) else ""
        if name in ("mermaid", "graphviz", "digraph", "graph", "uml", "plantuml"):
            language = name
        elif name in ("doctest", "testcode", "testoutput", "testsetup", "ipython", "jupyter-execute"):
            language = "pycon" if name in ("doctest", "ipython") else "python"
        code = str(node.get("code", ""))
        language = language or (self.highlight if name not in ("productionlist", "prompt", "console") else "")
        caption = str(node.get("caption", ""))
        language = "text" if language == "none" else language
        if name == "productionlist" and argument and not code:
            code = argument
        return Block("code", _fence(_dedent(code), language), language, title=caption)

    def _version(self, name: str, argument: str, shown: str, body: list[Block]) -> list[Block]:
        version = argument.split()[0] if argument.split() else ""
        lead = f"{VERSIONS[name.split(':')[-1]]} {version}".strip()
        first = shown
        if not first and body and body[0].kind == "prose":
            first, body = body[0].text, body[1:]
        return [Block("prose", f"{lead}: {first}" if first else lead + ".")] + body

    def _object(self, argument: str, body: list[Block]) -> list[Block]:
        signature = ", ".join(code_span(line) for line in argument.split("\n") if line.strip())
        if body and body[0].kind == "prose":
            return [Block("prose", f"{signature}: {body[0].text}" if signature else body[0].text)] + body[1:]
        return ([Block("prose", signature)] if signature else []) + body


def _dedent(code: str) -> str:
    lines = code.split("\n")
    cut = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[cut:] for line in lines)


def _unfence(text: str) -> str:
    lines = text.split("\n")
    return "\n".join(lines[1:-1]) if len(lines) >= 2 else text


def _pipe_row(cells: list[str], width: int) -> str:
    cells = cells + [""] * (width - len(cells))
    return "| " + " | ".join(cells) + " |"
