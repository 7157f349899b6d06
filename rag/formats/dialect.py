"""What a Markdown dialect (MkDocs Material, Docusaurus/MDX, Hugo) adds to the CommonMark parser.

A dialect is text steps run before parsing (includes, lines that are no content), markdown-it
block rules (admonitions, tabs), filters of code blocks (lines the site does not show) and of
prose (tags no HTML parser recognises). The dialect modules depend only on this one; the parser
(rag/formats/markdown.py) composes them.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # markdown-it loads with the first parse (rag/formats/markdown.py)
    from markdown_it import MarkdownIt

# Another file's text for an include: `target` as written, resolved against the including file's
# folder (`from_file`) or the docs root; already expanded, its front matter removed; None when it
# cannot be read (outside the docs root, missing, an include cycle, too deep).
Include = Callable[[str, bool], "str | None"]
Step = Callable[[str, Include], str]  # the whole text before parsing → the text parsed
Plugin = Callable[["MarkdownIt"], None]
CodeFilter = Callable[[str, str], "str | None"]  # (fence info, code) → the code shown, None: not shown
ProseFilter = Callable[[str], str]


@dataclass(frozen=True)
class Dialect:
    steps: tuple[Step, ...] = ()
    plugins: tuple[Plugin, ...] = ()
    code: tuple[CodeFilter, ...] = ()
    prose: tuple[ProseFilter, ...] = ()

    def __add__(self, other: Dialect) -> Dialect:
        return Dialect(self.steps + other.steps, self.plugins + other.plugins, self.code + other.code,
                       self.prose + other.prose)


_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")


def outside_code(text: str, edit: Callable[[str], str]) -> str:
    """`text` with `edit` applied to each run of lines outside fenced code blocks (code stays as
    written: an `import` line or a `{/* comment */}` in a code sample is content)."""
    pieces: list[str] = []
    run: list[str] = []
    fence = ""
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence:
            pieces.append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence) \
                    and not match.group(2).strip():
                fence = ""
        elif match and not (match.group(1)[0] == "`" and "`" in match.group(2)):
            if run:
                pieces.append(edit("\n".join(run)))
                run = []
            fence = match.group(1)
            pieces.append(line)
        else:
            run.append(line)
    if run:
        pieces.append(edit("\n".join(run)))
    return "\n".join(pieces)
