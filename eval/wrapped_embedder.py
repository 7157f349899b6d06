"""Embedders that wrap the model to watch it (the sync benchmarks, `eval shared-index`): the
model's name, size and threads are the wrapped one's."""
from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from rag import Embedder


@dataclass(eq=False)  # compared by identity, so the engine's meaning check can share it
class WrappedEmbedder:
    inner: Embedder

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def threads(self) -> int:
        return self.inner.threads

    @threads.setter
    def threads(self, value: int) -> None:
        self.inner.threads = value


@dataclass(eq=False)
class FillingEmbedder(WrappedEmbedder):
    """The model asked only for the texts `known` has no vector for; each vector it makes goes to
    `learn` (`model_s`: the model's own seconds; `embedded`: the texts it embedded)."""

    model_s: float = 0.0
    embedded: int = 0

    def known(self, texts: list[str]) -> dict[int, np.ndarray]:
        """Vectors of some of `texts` by position, found without the model."""
        return {}

    def learn(self, text: str, vector: np.ndarray) -> None:
        """A vector the model just made."""

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dim), np.float32)
        for positions, batch in self.embed_batches(texts):
            vectors[positions] = batch
        return vectors

    def embed_batches(self, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        found = self.known(texts)
        if found:
            yield list(found), np.stack(list(found.values()))
        missing = [i for i in range(len(texts)) if i not in found]
        started = time.perf_counter()
        for positions, vectors in self.inner.embed_batches([texts[i] for i in missing]):
            self.model_s += time.perf_counter() - started
            self.embedded += len(positions)
            indices = [missing[p] for p in positions]
            for i, vector in zip(indices, vectors):
                self.learn(texts[i], vector)
            yield indices, vectors
            started = time.perf_counter()
