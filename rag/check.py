"""Answer checks: every citation must name a source that was given; an answer without one, or
with one that names no given source, becomes an abstention."""
from __future__ import annotations

import re
from dataclasses import dataclass

from rag.prompt import DECLINE_MARKER

_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_DECLINES = re.compile(rf"^\W*(?:{DECLINE_MARKER}|I don'?t know\b)", re.I)


@dataclass(frozen=True)
class Checked:
    text: str
    cited: list[int]  # source numbers in order of first citation
    abstain_reason: str | None


def cited_numbers(text: str) -> list[int]:
    seen: list[int] = []
    for group in _CITATION.findall(text):
        for number in group.split(","):
            n = int(number)
            if n not in seen:
                seen.append(n)
    return seen


def check_answer(text: str, n_sources: int) -> Checked:
    text = text.strip()
    if not text or DECLINE_MARKER in text or _DECLINES.match(text):
        return Checked(text, [], "declined")
    cited = cited_numbers(text)
    if not cited or any(n < 1 or n > n_sources for n in cited):
        return Checked(text, cited, "invalid_citations")
    return Checked(text, cited, None)


def renumber(text: str, cited: list[int], n_sources: int) -> tuple[str, list[int]]:
    """Citations renumbered 1..m in order of first appearance. Returns the new text and the
    order of the sources (0-based old indexes: the cited ones first, then the others)."""
    new = {old: i for i, old in enumerate(cited, 1)}
    text = _CITATION.sub(lambda m: "[" + ", ".join(str(new[int(n)]) for n in m.group(1).split(",")) + "]", text)
    return text, [n - 1 for n in cited] + [i for i in range(n_sources) if i + 1 not in new]
