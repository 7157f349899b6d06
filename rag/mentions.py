"""Names a question uses that the docs never mention: a confident quote would be about something else.

"Can tRPC use gRPC between our services?", "what's the SLA of Vite's hosted build service?": the
sources retrieved for such a question are about its other words (tRPC, services, build), and a
quote from them reads like an answer while the docs never say a word about the thing asked. A
name is a word the asker wrote in upper or mixed case (gRPC, SLA); a capitalised word is not one
("my manager Bob", "I'm based in Portugal": people and places are mostly context in a question),
nor is a unit after a number ("16 MB"). A name is mentioned when a source's text, title or
section holds it (by stem and prefix, as retrieval's terms match), or any other page the reader
may read does (rag/engine.py asks the full-text index): then retrieval chose, as before.
"""
from __future__ import annotations

import re
from collections.abc import Iterable

from rag.terms import content_terms, matched_terms

_WORD = re.compile(r"[A-Za-z][\w+-]*")


def names(question: str) -> list[str]:
    """The words of a question written in upper or mixed case (gRPC, SLA, tRPC), in order."""
    found = []
    for match in _WORD.finditer(question):
        word = match.group(0).removesuffix("'s")
        if not any(ch.isupper() for ch in word[1:]):
            continue  # "Bob", "Portugal", a sentence's first word: a person or place is context
        if re.search(r"\d\s*$", question[:match.start()]):
            continue  # a unit: "16 MB", "5 GB"
        found.append(word)
    return found


def unmentioned(question: str, texts: Iterable[str]) -> list[str]:
    """The question's names that none of the texts holds."""
    asked = names(question)
    if not asked:
        return []
    words = {w for text in texts for w in content_terms(text)}
    return [name for name in asked if (terms := set(content_terms(name))) and not matched_terms(terms, words)]
