"""The model of a worker process in `eval.bench_ingest` (kept apart so a worker imports only the
embedder, not LanceDB)."""
from __future__ import annotations

import numpy as np

from rag import LocalMiniLM

_model: LocalMiniLM | None = None


def load(batch: int) -> None:
    global _model
    _model = LocalMiniLM(threads=1, batch=batch)


def embed(texts: list[str]) -> np.ndarray:
    if _model is None:
        raise RuntimeError("embed_worker.load was not run in this process")
    return _model.embed(texts)
