"""Hybrid retrieval: ranked lists of candidates (dense and BM25, the access filter inside each
search), fused by reciprocal rank fusion weighted by how much each list can be trusted for this
query, a cosine similarity floor, then MMR for the final k with at most a few chunks per document.

Each list is a Signal (rag/signals.py): its name, its default weight, its search and how its weight
adapts to the query. Fusion and the modes iterate SIGNALS (or the signals a caller passes), so they
take any number of lists.

On docs in several languages (rag/formats/language.py) the searches fetch more candidates and
then keep one language of each page (`one_language`): the asker's where the page has it, else the
docs' default. Translations of one page never crowd each other out of the k, and an answer never
mixes them. An index in one language is searched exactly as before.
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
from opentelemetry import trace

from rag.config import RetrievalConfig
from rag.formats.language import primary
from rag.freshness import DEPRECATED
from rag.rerank import Reranker, RerankError
from rag.signals import SIGNALS, Signal
from rag.store import Hit, Index

_TRACER = trace.get_tracer(__name__)
HYBRID = "hybrid"
Mode = str  # HYBRID (every list, fused), or the name of the one list searched alone
Found = dict[str, list[Hit]]  # list name -> its hits, best first, in the order of the signals


@dataclass(frozen=True)
class RankedList:
    name: str
    hits: list[Hit]
    weight: float


@dataclass
class Candidate:
    row: dict  # chunk_id, doc_path and access_rank; the whole row once selected
    vector: np.ndarray
    similarity: float  # cosine similarity to the query
    fused: float  # RRF score
    ranks: dict[str, int] = field(default_factory=dict)  # list name -> rank in it (0 = first)

    @property
    def chunk_id(self) -> str:
        return self.row["chunk_id"]


@dataclass
class Retrieval:
    candidates: int  # distinct chunks returned by the searches
    passed: list[Candidate]  # above the similarity floor, best fused first
    selected: list[Candidate]  # the final k after MMR
    lists: list[RankedList]  # the lists searched, with the weights used for this query
    rerank: str = ""  # "", "reranked" or "fallback: <why>"
    rerank_ms: float = 0.0
    query: str = ""  # what was searched (a follow-up made standalone)

    @property
    def best_similarity(self) -> float:
        return max((c.similarity for c in self.passed), default=0.0)

    def hits(self, name: str) -> list[Hit]:
        """One list's raw hits (for the answerability features); none when it was not searched."""
        return next((ranked.hits for ranked in self.lists if ranked.name == name), [])


@dataclass(frozen=True)
class Languages:
    """Which language of a page a question is answered from, on an index of several: the asker's
    where the page has it, else the docs' default language, else the best ranked one found. A
    language matches exactly, then by its primary subtag ("pt" is "pt-BR"'s)."""

    asker: str  # the asker's language ("ja", "pt-BR"); "" unknown
    default: str  # the docs' default language: a tag, or "" (the documents without a marker)
    unmarked: str  # what documents without a marker are written in; "" unnamed
    count: int  # languages in the index

    def search_limit(self, candidates: int) -> int:
        """Candidates per search: room for a page's variants, so that one language of each still
        fills the usual `candidates` (at most MAX_VARIANT_FACTOR times as many)."""
        return candidates * min(self.count, MAX_VARIANT_FACTOR)

    def choose(self, present: Mapping[str, int]) -> str:
        """The language kept of a page found in `present` (language -> its best rank)."""
        return min(present, key=lambda language: (self._tier(language), present[language]))

    def _tier(self, language: str) -> int:
        """0/1: the asker's language (exactly, by its primary subtag), 2/3: the default's, 4: neither."""
        spoken = language or self.unmarked
        if self.asker and (match := _match(spoken, self.asker)) is not None:
            return match
        if (match := _match(spoken, self.default)) is not None:
            return 2 + match
        return 4


def _match(spoken: str, wanted: str) -> int | None:
    """0: the same language tag, 1: the same primary subtag, None: another language."""
    if spoken.lower() == wanted.lower():
        return 0
    return 1 if primary(spoken) and primary(spoken) == primary(wanted) else None


MAX_VARIANT_FACTOR = 4  # searches of a multilingual index fetch at most this many times the candidates


def languages_for(asker: str, unmarked: str, census: Mapping[str, int]) -> Languages | None:
    """The language preference of a question on an index with `census` (documents per language,
    "" = without a marker); None when the index is in one language (nothing to choose). The
    default language is `unmarked` when named, else the most common one (ties: the unmarked)."""
    if len(census) < 2:
        return None
    default = unmarked or min(census, key=lambda language: (-census[language], language != "", language))
    return Languages(asker, default, unmarked, len(census))


def one_language(found: Found, labels: Mapping[str, tuple[str, str]], languages: Languages, limit: int) -> Found:
    """Each list with the chunks of a page in the language `languages` chooses for it (from the
    languages it was found in, across all lists), cut to `limit`. `labels`: chunk id -> (page,
    language); a chunk without one is its own page."""
    present: dict[str, dict[str, int]] = {}  # page -> language -> its best rank in any list
    for hits in found.values():
        for rank, hit in enumerate(hits):
            page, language = _label(hit, labels)
            ranks = present.setdefault(page, {})
            ranks[language] = min(ranks.get(language, rank), rank)
    kept = {page: languages.choose(ranks) for page, ranks in present.items()}
    return {name: [hit for hit in hits if kept[(label := _label(hit, labels))[0]] == label[1]][:limit]
            for name, hits in found.items()}


def _label(hit: Hit, labels: Mapping[str, tuple[str, str]]) -> tuple[str, str]:
    return labels.get(hit.row["chunk_id"]) or (hit.row["doc_path"], "")


def _signals(mode: Mode, signals: Sequence[Signal]) -> list[Signal]:
    return [s for s in signals if mode in (HYBRID, s.name)]


def list_weights(
    found: Mapping[str, list[Hit]], query_text: str, config: RetrievalConfig, mode: Mode,
    signals: Sequence[Signal] = SIGNALS,
) -> dict[str, float]:
    """Each found list's fusion weight in this mode: 0 for a list the mode leaves out."""
    weights = {name: 0.0 for name in found}
    for signal in _signals(mode, signals):
        if signal.name in found:
            weights[signal.name] = signal.weight(found[signal.name], query_text, config, mode != HYBRID)
    return weights


def ranked_lists(
    found: Mapping[str, list[Hit]], query_text: str, config: RetrievalConfig, mode: Mode,
    signals: Sequence[Signal] = SIGNALS,
) -> list[RankedList]:
    weights = list_weights(found, query_text, config, mode, signals)
    return [RankedList(name, hits, weights[name]) for name, hits in found.items()]


def fuse(lists: Sequence[RankedList], query: np.ndarray, rrf_k: int, doc_share: float = 0.0) -> list[Candidate]:
    """Merge the rankings with weighted RRF; every candidate gets its cosine similarity.

    With `doc_share` > 0 the fusion also runs at the document level (a document's rank in a list
    is that of its best chunk among the distinct documents) and a chunk's score mixes in its
    document's: a page whose one chunk leads the dense list and another the full-text list beats
    a page that leads only one of them."""
    merged: dict[str, Candidate] = {}
    doc_scores: dict[str, float] = {}
    for ranked in lists:
        if ranked.weight <= 0:
            continue
        doc_ranks: dict[str, int] = {}
        shared = tied_ranks([hit.score for hit in ranked.hits])
        for rank, hit in enumerate(ranked.hits):
            cand = merged.get(hit.row["chunk_id"])
            if cand is None:
                cand = Candidate(hit.row, hit.vector, float(hit.vector @ query), 0.0)
                merged[cand.chunk_id] = cand
            cand.fused += ranked.weight / (rrf_k + shared[rank] + 1)
            cand.ranks[ranked.name] = rank
            doc = hit.row["doc_path"]
            if doc not in doc_ranks:
                doc_ranks[doc] = len(doc_ranks)
                doc_scores[doc] = doc_scores.get(doc, 0.0) + ranked.weight / (rrf_k + doc_ranks[doc] + 1)
    if doc_share > 0:
        for cand in merged.values():
            cand.fused = (1 - doc_share) * cand.fused + doc_share * doc_scores[cand.row["doc_path"]]
    return sorted(merged.values(), key=lambda c: -c.fused)


def tied_ranks(scores: Sequence[float]) -> list[float]:
    """The rank each hit counts at in the fusion, best first: equal scores share the mean of their
    positions, so two pages that tie (the runbooks' two control-plane memory alerts score the same
    for "etcd members are down…") weigh the same whichever of them a store lists first."""
    ranks = [float(position) for position in range(len(scores))]
    start = 0
    for end in range(1, len(scores) + 1):
        if end == len(scores) or scores[end] != scores[start]:
            ranks[start:end] = [(start + end - 1) / 2] * (end - start)
            start = end
    return ranks


def mmr(candidates: list[Candidate], k: int, lam: float, per_doc: int = 0) -> list[Candidate]:
    """Maximal marginal relevance over fused relevance (scaled to [0, 1]) and chunk similarity,
    taking at most `per_doc` chunks of one document (0 = no cap) while others are left: several
    chunks of one page must not push a second relevant page out of the k."""
    if len(candidates) <= 1:
        return candidates[:k]
    top = candidates[0].fused
    relevance = np.array([c.fused / top for c in candidates])
    vectors = np.stack([c.vector for c in candidates])
    pairwise = vectors @ vectors.T
    docs = [c.row["doc_path"] for c in candidates]
    chosen = [0]
    taken = {docs[0]: 1}
    redundancy = pairwise[0].copy()
    while len(chosen) < min(k, len(candidates)):
        score = lam * relevance - (1 - lam) * redundancy
        score[chosen] = -np.inf
        if per_doc:
            full = [i for i, d in enumerate(docs) if taken.get(d, 0) >= per_doc and i not in chosen]
            if len(full) < len(candidates) - len(chosen):  # others remain: skip the full docs
                score[full] = -np.inf
        best = int(np.argmax(score))
        chosen.append(best)
        taken[docs[best]] = taken.get(docs[best], 0) + 1
        redundancy = np.maximum(redundancy, pairwise[best])
    return [candidates[i] for i in chosen]


def rank(found: Mapping[str, list[Hit]], query: np.ndarray, query_text: str, config: RetrievalConfig,
         mode: Mode = HYBRID, signals: Sequence[Signal] = SIGNALS) -> Retrieval:
    """Everything after the searches (pure: the eval sweep replays it over cached hits)."""
    lists = ranked_lists(found, query_text, config, mode, signals)
    return select(fuse(lists, query, config.rrf_k, config.doc_fusion), lists, config)


def select(fused: list[Candidate], lists: list[RankedList], config: RetrievalConfig) -> Retrieval:
    passed = [c for c in fused if c.similarity >= config.min_similarity]
    selected = mmr(passed, config.top_k, config.mmr_lambda, config.max_chunks_per_doc)
    return Retrieval(len(fused), passed, selected, lists)


async def rerank(store: Index, reranker: Reranker, query_text: str, fused: list[Candidate]) -> list[Candidate]:
    """The reranker's order of the top fused candidates (their fused scores become rank-based, so
    MMR follows it), the rest after them. Raises RerankError: the caller keeps the fused order."""
    rows = await store.rows([c.chunk_id for c in fused[: reranker.top_n]])
    head = [c for c in fused[: reranker.top_n] if c.chunk_id in rows]  # not a chunk a sync just removed
    documents = [_passage(rows[c.chunk_id]) for c in head]
    order = await reranker.order(query_text, documents)
    ranked = [head[i] for i in order] + fused[reranker.top_n:]
    for position, cand in enumerate(ranked):
        cand.fused = 1.0 / (position + 1)
    return ranked


def _passage(row: dict) -> str:
    heading = " › ".join(part for part in (row["title"], row["section"]) if part)
    return f"{heading}\n{row['text']}" if heading else row["text"]


async def search_lists(store: Index, query_vector: np.ndarray, query_text: str, max_rank: int, limit: int,
                       mode: Mode = HYBRID, within: frozenset[str] | None = None,
                       signals: Sequence[Signal] = SIGNALS) -> Found:
    """The mode's searches, concurrently (`within`: of these documents only)."""
    searched = _signals(mode, signals)
    found = await asyncio.gather(*(s.search(store, query_vector, query_text, max_rank, limit, within)
                                   for s in searched))
    return {signal.name: in_order(hits) for signal, hits in zip(searched, found)}


def in_order(hits: list[Hit]) -> list[Hit]:
    """Best first, equal scores by chunk id: two pages with the same text (a copied page) tie,
    and a store returns ties in its rows' order, which an index updated in place and one built
    anew do not share (formats-gitbook's MRR was 0.531 on one and 0.594 on the other)."""
    return sorted(hits, key=lambda hit: (-hit.score, hit.row["chunk_id"]))


async def search_languages(store: Index, query_vector: np.ndarray, query_text: str, max_rank: int, limit: int,
                           mode: Mode = HYBRID, languages: Languages | None = None,
                           within: frozenset[str] | None = None) -> Found:
    """The mode's searches; on an index in several languages (`languages`) with room for each
    page's variants, then one language of each page kept (`one_language`), `limit` per list."""
    if languages is None:
        return await search_lists(store, query_vector, query_text, max_rank, limit, mode, within)
    found = await search_lists(store, query_vector, query_text, max_rank, languages.search_limit(limit), mode, within)
    labels = await store.labels(sorted({hit.row["chunk_id"] for hits in found.values() for hit in hits}))
    return one_language(found, labels, languages, limit)


async def retrieve(
    store: Index,
    query_vector: np.ndarray,
    query_text: str,
    max_rank: int,
    config: RetrievalConfig,
    mode: Mode = HYBRID,
    reranker: Reranker | None = None,
    languages: Languages | None = None,
    within: frozenset[str] | None = None,
) -> Retrieval:
    """Search, fuse, rerank when a reranker is configured, select, then read the final k rows
    whole. A reranker failure keeps the fused order and is reported in `rerank`. `languages`: on
    an index in several languages, which language of each page is kept (None: one language).
    `within`: only these documents are searched (a channel's scope, rag/scope.py).

    A sync that replaces a document between the search and the row read removes chunks that were
    selected: the search runs once more (it then sees the new version), and chunks still gone are
    left out rather than failing the question.

    The selected chunks of deprecated pages (their rows say so) come after the others, in the
    same order otherwise: an answer is written from, and cites first, the current page. The scores
    are left alone, and a deprecated page that is all there is still answers."""
    args = (store, query_vector, query_text, max_rank, config, mode, reranker, languages, within)
    result = await _retrieve_once(*args)
    selected = await fill_rows(store, result.selected)
    if len(selected) < len(result.selected):
        result = await _retrieve_once(*args)
        selected = await fill_rows(store, result.selected)
    result.selected = sorted(selected, key=lambda c: c.row.get("status") == DEPRECATED)  # stable
    return result


async def _retrieve_once(store: Index, query_vector: np.ndarray, query_text: str, max_rank: int,
                         config: RetrievalConfig, mode: Mode, reranker: Reranker | None,
                         languages: Languages | None, within: frozenset[str] | None) -> Retrieval:
    found = await search_languages(store, query_vector, query_text, max_rank, config.candidates, mode, languages,
                                   within)
    lists = ranked_lists(found, query_text, config, mode)
    fused = fuse(lists, query_vector, config.rrf_k, config.doc_fusion)
    status, rerank_ms = "", 0.0
    if reranker is not None and fused:
        started = time.perf_counter()
        try:
            with _TRACER.start_as_current_span("rerank"):
                fused, status = await rerank(store, reranker, query_text, fused), "reranked"
        except RerankError as exc:
            status = f"fallback: {exc}"
        rerank_ms = round((time.perf_counter() - started) * 1000, 2)
    result = select(fused, lists, config)
    result.rerank, result.rerank_ms = status, rerank_ms
    return result


async def fill_rows(store: Index, selected: list[Candidate]) -> list[Candidate]:
    """The selected candidates with their whole rows, in order, leaving out any whose chunk no
    longer exists (a sync removed it after the search)."""
    rows = await store.rows([c.chunk_id for c in selected])
    kept = [c for c in selected if c.chunk_id in rows]
    for c in kept:
        c.row.update(rows[c.chunk_id])
    return kept
