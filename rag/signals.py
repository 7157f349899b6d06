"""The ranked lists retrieval fuses (rag/retrieval.py), each one object: its name, its default
fusion weight, its search, and how its weight adapts to the query. `SIGNALS` is the one list of
them; fusion, the modes (a list searched alone), the settings (DOCSBOT_LIST_WEIGHTS, keyed by
name), the eval's comparison and the sweep iterate it and never name a list. Another list, say
one searching the pages' titles, is one entry here (a FullText over `title`), plus its column's
line in rag/store/schema.py's TEXT_SEARCHED and, on Postgres, the migration adding its tsvector.

Why the full-text list's weight adapts: on docs full of exact product names BM25 is the better
list, on paraphrased questions dense search is; a fixed weight tuned on one kind of corpus loses on
the other. Its weight scales with the share of the question's content words its top hit contains
(its term coverage): a hit that contains them all is strong lexical evidence, one that matches a
single common word is not.

Light to import (no store, no numpy at run time): the settings read the names and default weights
when a command starts.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Awaitable

from rag.terms import coverage, question_terms

if TYPE_CHECKING:
    import numpy as np

    from rag.config import RetrievalConfig
    from rag.store import Hit, Index


@dataclass(frozen=True)
class Signal:
    """One ranked list. A subclass says how it is searched; its weight is the configured one (its
    default when the configuration names no weight for it)."""

    name: str
    default_weight: float

    def search(self, index: Index, vector: np.ndarray, text: str, max_rank: int, limit: int,
               within: frozenset[str] | None) -> Awaitable[list[Hit]]:
        """The list's hits, best first; `within`: of these documents only (rag/scope.py)."""
        raise NotImplementedError

    def weight(self, hits: list[Hit], query_text: str, config: RetrievalConfig, alone: bool) -> float:
        """Its fusion weight for this query's hits (`alone`: the only list searched, nothing to
        weigh it against)."""
        return config.list_weights.get(self.name, self.default_weight)


@dataclass(frozen=True)
class Dense(Signal):
    """Nearest chunks by cosine similarity to the question's vector."""

    def search(self, index: Index, vector: np.ndarray, text: str, max_rank: int, limit: int,
               within: frozenset[str] | None) -> Awaitable[list[Hit]]:
        return index.dense(vector, max_rank, limit, within)


@dataclass(frozen=True)
class FullText(Signal):
    """The index's full-text (BM25) search of one chunk column (one of rag/store/schema.py's
    TEXT_SEARCHED); its weight is scaled by its top hit's term coverage of that column raised to
    `fusion_coverage_power` (0 = a fixed weight)."""

    column: str = "search_text"

    def search(self, index: Index, vector: np.ndarray, text: str, max_rank: int, limit: int,
               within: frozenset[str] | None) -> Awaitable[list[Hit]]:
        return index.text(text, max_rank, limit, within, self.column)

    def weight(self, hits: list[Hit], query_text: str, config: RetrievalConfig, alone: bool) -> float:
        power = 0.0 if alone else config.fusion_coverage_power
        return super().weight(hits, query_text, config, alone) * (self.coverage(hits, query_text) ** power
                                                                   if power else 1.0)

    def coverage(self, hits: list[Hit], query_text: str) -> float:
        """Share of the question's content words found in the best hit's column (0 without hits)."""
        return _coverage(query_text, hits[0].row.get(self.column, "")) if hits else 0.0


@functools.lru_cache(maxsize=1024)
def _coverage(query_text: str, hit_text: str) -> float:
    """Cached: `eval sweep` replays the same query against hundreds of settings."""
    return coverage(question_terms(query_text), hit_text)


DENSE, TEXT = "dense", "bm25"  # the two lists' names (the answerability features read both)
SIGNALS: tuple[Signal, ...] = (Dense(DENSE, 1.0), FullText(TEXT, 1.5))


def default_weights() -> dict[str, float]:
    """Each list's default fusion weight, by name."""
    return {signal.name: signal.default_weight for signal in SIGNALS}
