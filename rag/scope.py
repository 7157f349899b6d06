"""A channel's scope: the documents a question asked there is searched in first.

`Scope(("runbooks/**",), "prefer")` (with several sources also `source:runbooks`) searches the
documents whose path matches a glob (globs as DOCSBOT_INCLUDE's: `**` spans folders, `*` does
not) and, when nothing there gets past the
answerability gate, everything the reader may read, saying so in the answer; `"only"` never leaves
the scope. The reader's level still filters inside the scope, in the same search (rag/store):
the scope narrows what a reader may see, never widens it.

The globs are matched against the index's documents (listed once per index version) and the
search is filtered to those paths before its top k, like the access filter.
"""
from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from rag.paths import check_pattern, glob_match
from rag.store import Index

ScopeMode = Literal["prefer", "only"]
SCOPE_MODES: tuple[ScopeMode, ...] = ("prefer", "only")
FALLS_BACK = {"no_match", "no_access"}  # abstentions a `prefer` scope retries with every document


def _source_glob(pattern: str) -> str:
    """`source:handbook` is every document of that source (stored as `handbook:<path>` when the
    index holds several, sync/source_index.py); a glob may also name one, `handbook:ops/**`."""
    return f"{pattern.removeprefix('source:')}:**" if pattern.startswith("source:") else pattern


@dataclass(frozen=True)
class Scope:
    patterns: tuple[str, ...]
    mode: ScopeMode = "prefer"

    @classmethod
    def parse(cls, patterns: object, mode: object = "prefer") -> "Scope":
        """A scope from an access file's `scope` and `scope_mode`; ValueError names what is wrong."""
        if not isinstance(patterns, list) or not patterns or not all(isinstance(p, str) and p for p in patterns):
            raise ValueError(f"`scope` must be a non-empty list of globs such as [\"runbooks/**\"], got {patterns!r}")
        if mode not in SCOPE_MODES:
            raise ValueError(f"`scope_mode` must be one of {list(SCOPE_MODES)}, got {mode!r}")
        return cls(tuple(check_pattern(_source_glob(p).strip("/")) for p in patterns), mode)  # type: ignore[arg-type]

    @property
    def only(self) -> bool:
        return self.mode == "only"

    def matches(self, doc_path: str) -> bool:
        return any(glob_match(doc_path, pattern) for pattern in self.patterns)

    def within(self, documents: Iterable[str]) -> frozenset[str]:
        return frozenset(doc for doc in documents if self.matches(doc))

    def unmatched(self, documents: Iterable[str]) -> list[str]:
        """The globs no document matches (`docsbot doctor` warns of each)."""
        docs = list(documents)
        return [p for p in self.patterns if not any(glob_match(doc, p) for doc in docs)]

    def named(self) -> str:
        return ", ".join(self.patterns)

    def fallback_note(self) -> str:
        return f"Nothing in this channel's docs ({self.named()}) answered this, so I looked in all the docs."

    def only_note(self) -> str:
        return f"Here I answer only from this channel's docs ({self.named()})."


async def documents_in(store: Index, scope: Scope) -> frozenset[str]:
    """The indexed documents in `scope` (the index lists them once per version, and each scope
    is matched once per list)."""
    return _within(scope, await store.documents())


@functools.lru_cache(maxsize=64)
def _within(scope: Scope, documents: tuple[str, ...]) -> frozenset[str]:
    return scope.within(documents)
