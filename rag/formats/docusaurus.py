"""Docusaurus (MDX and its Markdown): what the site does not show, and its admonitions.

* ESM `import` / `export` statements (from their line to the next blank line, as MDX reads them)
  are dropped; an `import Name from './partial.mdx'` makes a later `<Name />` line the partial's
  text (its path, relative to the file, is an include);
* `{/* comments */}` are dropped;
* `:::tip Title` (or `:::tip[Title]`) ... `:::` is an admonition (an `admonition` token like
  MkDocs' ones: `info` the kind, `meta["title"]`); a stray closing `:::` is dropped;
* code fences marked `twoslash` show only what follows the last `// ---cut---`, without the
  `// @directive` and `// ^?` lines; a `twoslash include` block is never shown;
* JSX tags that no HTML parser takes for a tag (`<Foo bar={{ a: 1 }} />`) are dropped from prose.
Other JSX tags are HTML to the CommonMark parser, dropped there with their text kept. Heading ids
(`{#id}`) are read with every other explicit id (rag/formats/anchors.py).

None of this occurs in plain Markdown outside code, and Docusaurus reads `.md` files as MDX
too, so the dialect applies to `.md` and `.mdx` alike.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from rag.formats.dialect import Dialect, Include, outside_code

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_block import StateBlock

_CONTAINER = re.compile(r"(:{3,})[ \t]*([A-Za-z][\w-]*)?(.*)")  # colons, kind, title (`[Title]`, `{attrs}`)
_CONTAINER_ATTRS = re.compile(r"\{[^{}]*\}$")
_IMPORT = re.compile(r"import\s+(?:type\s+)?(?:['\"]|\{|\*\s*as\s|[\w$]+\s*(?:,|\s+from\s))")
_IMPORT_LINES = 100  # the most an import statement spans (a line like one that never ends is prose)
_IMPORT_END = re.compile(r"['\"][^'\"\n]+['\"][ \t]*;?[ \t]*$")
_EXPORT = re.compile(r"export(?:\s+(?:default|const|let|var|function|async|class|type|interface|enum)\b|\s*[{*])")
_PARTIAL = re.compile(r"import\s+([A-Za-z_$][\w$]*)\s+from\s+['\"]([^'\"]+\.mdx?)['\"]")
_PARTIAL_USE = re.compile(r"[ \t]*<([A-Z][\w$]*)[ \t]*/>[ \t]*")
_COMMENT = re.compile(r"\{/\*[^{}]*?\*/\}")
_TWOSLASH_HIDDEN = re.compile(r"[ \t]*//[ \t]*(?:@\w+(?::.*)?|\^+[?|]?.*)")
_CUT = re.compile(r"[ \t]*//[ \t]*---cut(?:-before)?---[ \t]*")
_CUT_AFTER = re.compile(r"[ \t]*//[ \t]*---cut-after---[ \t]*")
# "x", 'x', {expr}, x: no value crosses a `<`, so a tag left open costs a scan to the next `<`
_JSX_VALUE = r"""(?:"[^"<]*"|'[^'<]*'|\{[^{}<]*(?:\{[^{}<]*\}[^{}<]*)*\}|[^\s"'=<>`{}]+)"""
_JSX_ATTR = rf"(?:\s++(?:[\w:.-]+(?:\s*=\s*{_JSX_VALUE})?|\{{\.\.\.[^{{}}<]*\}}))"  # name, name=value, {{...spread}}
_JSX_TAG = re.compile(rf"</?[A-Z][\w.]*{_JSX_ATTR}*\s*/?>|</?>")
_CODE_SPAN = re.compile(r"(`+)(?:.+?)\1", re.S)


def _container(state: StateBlock, start: int, end: int, silent: bool) -> bool:
    if state.is_code_block(start):
        return False
    match = _CONTAINER.fullmatch(state.src, state.bMarks[start] + state.tShift[start], state.eMarks[start])
    if not match or (match.group(2) is None and match.group(3).strip()):
        return False  # `:::{.x}` and the like are no admonition
    if silent:
        return True
    colons, kind, title = match.group(1), match.group(2), match.group(3).strip()
    if kind is None:  # a closing marker whose container ended already (at the end of an HTML block)
        state.line = start + 1
        return True
    line, closed = start + 1, False
    while line < end:
        if not state.isEmpty(line) and state.sCount[line] < state.blkIndent:
            break  # the list item (or other block) holding the container ends here
        text = state.src[state.bMarks[line] + state.tShift[line]:state.eMarks[line]].rstrip()
        if len(text) >= len(colons) and set(text) == {":"} and state.sCount[line] - state.blkIndent < 4:
            closed = True
            break
        line += 1
    opening = state.push("admonition_open", "div", 1)
    opening.info = kind.lower()
    title = _CONTAINER_ATTRS.sub("", title).strip()
    opening.meta = {"title": title[1:title.index("]")].strip() if title.startswith("[") and "]" in title else title}
    opening.map = [start, line]
    old_max = state.lineMax
    state.lineMax = line
    state.md.block.tokenize(state, start + 1, line)
    state.lineMax = old_max
    state.push("admonition_close", "div", -1)
    state.line = line + 1 if closed else line
    return True


def blocks(md: MarkdownIt) -> None:
    md.block.ruler.before("fence", "docusaurus_admonition", _container,
                          {"alt": ["paragraph", "reference", "blockquote", "list"]})


def mdx_text(text: str, include: Include) -> str:
    """ESM statements and comments dropped, partials put in; code left as written."""
    partials: dict[str, str] = {}  # component name → path, from the imports seen so far

    def edit(run: str) -> str:
        out: list[str] = []
        lines = run.split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            if end := _statement_end(lines, i):
                partials.update(_PARTIAL.findall("\n".join(lines[i:end])))
                i = end
                continue
            use = _PARTIAL_USE.fullmatch(line)
            if use and use.group(1) in partials:
                out.append(include(partials[use.group(1)], True) or "")
            else:
                out.append(line)
            i += 1
        return _COMMENT.sub("", "\n".join(out))

    return outside_code(text, edit)


def _statement_end(lines: list[str], i: int) -> int:
    """Where the ESM statement starting at line i ends (0: none starts there): an import at the
    line with its module's quoted name, an export at the next blank line (as MDX reads them)."""
    if _EXPORT.match(lines[i]):
        end = i
        while end < len(lines) and lines[end].strip():
            end += 1
        return end
    if not _IMPORT.match(lines[i]):
        return 0
    for end in range(i, min(len(lines), i + _IMPORT_LINES)):
        if not lines[end].strip():
            return 0
        if _IMPORT_END.search(lines[end]):
            return end + 1
    return 0


def twoslash(info: str, code: str) -> str | None:
    words = info.split()
    if "twoslash" not in words:
        return code
    if words[:2] == ["twoslash", "include"]:
        return None
    lines = code.split("\n")
    cuts = [n for n, line in enumerate(lines) if _CUT.fullmatch(line)]
    if cuts:
        lines = lines[cuts[-1] + 1:]
    after = next((n for n, line in enumerate(lines) if _CUT_AFTER.fullmatch(line)), len(lines))
    return "\n".join(line for line in lines[:after] if not _TWOSLASH_HIDDEN.fullmatch(line))


def jsx_tags(text: str) -> str:
    """`text` without JSX tags outside its code spans."""
    out, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [_JSX_TAG.sub("", text[at:span.start()]), span.group(0)]
        at = span.end()
    return "".join(out) + _JSX_TAG.sub("", text[at:])


DOCUSAURUS = Dialect(steps=(mdx_text,), plugins=(blocks,), code=(twoslash,), prose=(jsx_tags,))
