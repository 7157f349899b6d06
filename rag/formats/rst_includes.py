"""What an RST document reads from other files, through Source.read and inside the docs root only:
the per-document Context the directives and roles find in the docutils settings (an include
target resolved against the including file, each file read listed for Parsed.includes, the title
of the page a `:doc:` names, read once), and `include_window`, the part of an included file that
the `start-after` / `end-before` / `lines` … options keep.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from rag.formats.model import ReadFile
from rag.formats.rst_inline import SPACE


_RST_TITLE = re.compile(r"^(?:([=\-~^\"'`#*+<>:._])\1{2,}\n)?(\S[^\n]*)\n([=\-~^\"'`#*+<>:._])\3{2,}[ \t]*$", re.M)


def include_window(text: str, options: dict[str, Any]) -> str:
    """An include's `start-after` / `end-before` / `start-line` / `end-line` / `lines` window."""
    if after := options.get("start-after"):
        text = text.split(after, 1)[1] if after in text else text
    if at := options.get("start-at"):
        text = text[text.index(at):] if at in text else text
    if before := options.get("end-before"):
        text = text.split(before, 1)[0]
    if end_at := options.get("end-at"):
        text = text[: text.index(end_at) + len(end_at)] if end_at in text else text
    lines = text.split("\n")
    if spec := options.get("lines"):
        lines = [line for n, line in enumerate(lines, 1) if _in_ranges(n, str(spec))]
    start, end = options.get("start-line"), options.get("end-line")
    if start or end:
        lines = lines[int(start or 0): int(end) if end else None]
    return "\n".join(lines).strip("\n")


def _in_ranges(n: int, spec: str) -> bool:
    """Whether line n is in a Sphinx `:lines:` spec like `1,3,5-10,20-`."""
    for part in spec.replace(" ", "").split(","):
        low, dash, high = part.partition("-")
        first = int(low) if low.isdigit() else 1
        last = (int(high) if high.isdigit() else 10**9) if dash else first
        if first <= n <= last:
            return True
    return False


@dataclass
class Context:
    """The per-document state the directives and roles read (docutils' `settings.docsbot`)."""

    path: str
    read: ReadFile
    includes: list[str] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)

    def resolve(self, target: str, from_path: str | None) -> str | None:
        """A docs-root-relative path for an include target (`/x` is from the root), or None
        when it would leave the docs root."""
        base = posixpath.dirname(from_path or self.path) if not target.startswith("/") else ""
        rel = posixpath.normpath(posixpath.join(base, target.lstrip("/")))
        return None if rel.startswith("..") or rel == "." else rel

    def fetch(self, rel: str) -> str | None:
        text = self.read(rel)
        if text is not None:
            self.includes.append(rel)
        return text

    def doc_title(self, target: str, from_path: str | None) -> str:
        """The title of the page a `:doc:` names (the title Sphinx shows), else its last part."""
        rel = self.resolve(target, from_path if from_path and not from_path.startswith("<") else None)
        if rel is None:
            return target
        if rel not in self.titles:
            text = self.read(rel + ".rst")
            match = _RST_TITLE.search(text.replace("\r\n", "\n")) if text else None
            self.titles[rel] = SPACE.sub(" ", match.group(2)).strip() if match else target
        return self.titles[rel]
