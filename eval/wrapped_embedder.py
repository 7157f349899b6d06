"""An embedder that wraps the model to watch it (the sync benchmarks): the model's name, size and
threads are the wrapped one's."""
from __future__ import annotations

from dataclasses import dataclass

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
