"""Hybrid retrieval: dense + BM25 candidates (access filter inside each search), a cosine
similarity floor, reciprocal rank fusion, then MMR for the final k."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

import numpy as np

from docsbot.settings import Settings
from rag.store import Hit, Store

Mode = Literal["hybrid", "dense", "bm25"]


@dataclass
class Candidate:
    row: dict  # chunk_id, doc_path and access_rank; the whole row once selected
    vector: np.ndarray
    similarity: float  # cosine similarity to the query
    fused: float  # RRF score
    dense_rank: int | None = None
    text_rank: int | None = None

    @property
    def chunk_id(self) -> str:
        return self.row["chunk_id"]


@dataclass
class Retrieval:
    candidates: int  # distinct chunks returned by the searches
    passed: list[Candidate]  # above the similarity floor, best fused first
    selected: list[Candidate]  # the final k after MMR

    @property
    def best_similarity(self) -> float:
        return max((c.similarity for c in self.passed), default=0.0)


def fuse(dense: list[Hit], text: list[Hit], query: np.ndarray, settings: Settings, mode: Mode) -> list[Candidate]:
    """Merge both rankings with RRF; every candidate gets its cosine similarity to the query."""
    merged: dict[str, Candidate] = {}
    lists = []
    if mode in ("hybrid", "dense"):
        lists.append((dense, settings.dense_weight, "dense_rank"))
    if mode in ("hybrid", "bm25"):
        lists.append((text, settings.bm25_weight, "text_rank"))
    for hits, weight, rank_field in lists:
        for rank, hit in enumerate(hits):
            cand = merged.get(hit.row["chunk_id"])
            if cand is None:
                cand = Candidate(hit.row, hit.vector, float(hit.vector @ query), 0.0)
                merged[cand.chunk_id] = cand
            cand.fused += weight / (settings.rrf_k + rank + 1)
            setattr(cand, rank_field, rank)
    return sorted(merged.values(), key=lambda c: -c.fused)


def mmr(candidates: list[Candidate], k: int, lam: float) -> list[Candidate]:
    """Maximal marginal relevance over fused relevance (scaled to [0, 1]) and chunk similarity."""
    if len(candidates) <= 1:
        return candidates[:k]
    top = candidates[0].fused
    relevance = np.array([c.fused / top for c in candidates])
    vectors = np.stack([c.vector for c in candidates])
    pairwise = vectors @ vectors.T
    chosen = [0]
    redundancy = pairwise[0].copy()
    while len(chosen) < min(k, len(candidates)):
        score = lam * relevance - (1 - lam) * redundancy
        score[chosen] = -np.inf
        best = int(np.argmax(score))
        chosen.append(best)
        redundancy = np.maximum(redundancy, pairwise[best])
    return [candidates[i] for i in chosen]


async def _none() -> list[Hit]:
    return []


async def retrieve(
    store: Store,
    query_vector: np.ndarray,
    query_text: str,
    max_rank: int,
    settings: Settings,
    mode: Mode = "hybrid",
) -> Retrieval:
    """Both searches run concurrently; the final k rows are then read whole."""
    dense, text = await asyncio.gather(
        store.dense(query_vector, max_rank, settings.candidates) if mode != "bm25" else _none(),
        store.text(query_text, max_rank, settings.candidates) if mode != "dense" else _none(),
    )
    fused = fuse(dense, text, query_vector, settings, mode)
    passed = [c for c in fused if c.similarity >= settings.min_similarity]
    selected = mmr(passed, settings.top_k, settings.mmr_lambda)
    rows = await store.rows([c.chunk_id for c in selected])
    for c in selected:
        c.row.update(rows[c.chunk_id])
    return Retrieval(candidates=len(fused), passed=passed, selected=selected)
