"""Answer checks: every citation must name a source that was given; an answer without one, or
with one that names no given source, becomes an abstention. Links in an answer are only those its
sources contain, and a streamed answer shows nothing the check has not let through."""
from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

from rag.prompt import DECLINE_MARKER

CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
_DECLINES = re.compile(rf"^\W*(?:{DECLINE_MARKER}|I don'?t know\b)", re.I)


@dataclass(frozen=True)
class Checked:
    text: str
    cited: list[int]  # source numbers in order of first citation
    abstain_reason: str | None


def cited_numbers(text: str) -> list[int]:
    seen: list[int] = []
    for group in CITATION.findall(text):
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
    text = CITATION.sub(lambda m: "[" + ", ".join(str(new[int(n)]) for n in m.group(1).split(",")) + "]", text)
    return text, [n - 1 for n in cited] + [i for i in range(n_sources) if i + 1 not in new]


# Links: an answer may link only to what its sources contain: a bare URL (a scheme, or www.) and
# the target of a markdown link `[label](url)` must appear in them.
_URL = re.compile(r"\b(?:[a-z][a-z0-9+.-]*://|mailto:|www\.)[^\s<>()\[\]{}|\"'`]+", re.I)
_URL_END = ".,;:!?*_~"
_MARKDOWN_LINK = re.compile(r"\[([^\[\]]*)\]\(\s*<?([^()<>\s]*)>?(?:\s+\"[^\"]*\")?\s*\)")
LINK_REMOVED = "(link removed)"


def links_in(texts: Iterable[str]) -> frozenset[str]:
    """Every URL in `texts` (trailing punctuation is not part of a URL)."""
    return frozenset(m.group(0).rstrip(_URL_END) for text in texts for m in _URL.finditer(text))


def without_foreign_links(text: str, known: frozenset[str]) -> str:
    """`text` without a link to a URL not in `known`: such a markdown link becomes its label, such
    a bare URL LINK_REMOVED. Everything else is left as written."""
    def markdown(m: re.Match[str]) -> str:
        url = m.group(2)
        return m.group(1) if _URL.match(url) and url.rstrip(_URL_END) not in known else m.group(0)

    def bare(m: re.Match[str]) -> str:
        url = m.group(0).rstrip(_URL_END)
        return m.group(0) if url in known else LINK_REMOVED + m.group(0)[len(url):]

    return _URL.sub(bare, _MARKDOWN_LINK.sub(markdown, text))


def inert(text: str) -> str:
    """Text that renders no markdown link (`[label](target)` is shown as `[label] (target)`)."""
    return text.replace("](", "] (")


def settled(text: str) -> int:
    """How much of a growing text can be shown without cutting a link or a citation in two: up to
    its last white space, and not from a `[` whose link or citation is still being written."""
    end = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t")) + 1
    start = text.rfind("[", 0, end)
    if start >= 0:
        tail = text[start:end]
        close = tail.find("](")
        if "]" not in tail or (close >= 0 and ")" not in tail[close:]):
            return start
    return end


_CITED = re.compile(r"\[\d+(?:\s*,\s*\d+)*\][^\s\[]*\s")  # a citation, the punctuation after it, a space


def cited_end(text: str) -> int:
    """Where the settled part of a growing text ends that its last citation closes (0: none)."""
    return max((m.end() for m in _CITED.finditer(text, 0, settled(text))), default=0)


class StreamGate:
    """What of a streamed answer its reader sees before the citation check decides: only text that
    a citation closes, from the first one on that names a given source (never a decline), with
    foreign links removed and markdown links inert; and nothing more once a citation fails (the
    final message is then the abstention)."""

    def __init__(self, sink: Callable[[str], Awaitable[None]], n_sources: int, known: frozenset[str]) -> None:
        self._sink = sink
        self._n_sources = n_sources
        self._known = known
        self._text = ""
        self._shown = 0
        self._stopped = False

    async def __call__(self, delta: str) -> None:
        self._text += delta
        end = cited_end(self._text)
        if self._stopped or end <= self._shown:
            return
        if check_answer(self._text[:end], self._n_sources).abstain_reason:
            self._stopped = self._shown > 0
            return
        piece = inert(without_foreign_links(self._text[self._shown:end], self._known))
        self._shown = end
        await self._sink(piece)
