"""An OpenAI-compatible /embeddings endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp's server):
one request per call, the client's own retries off. rag/embeddings.py retries it as chat is
retried (rag/attempts.py), reading the same classification of its failures."""
from __future__ import annotations

from rag.config import LLMConfig
from rag.providers.openai_clients import openai_client
from rag.providers.openai_compatible import classify
from rag.providers.protocol import Failure, MalformedReply


class OpenAIEmbeddings:
    def __init__(self, endpoint: LLMConfig, model: str) -> None:
        self._client = openai_client(endpoint, endpoint.attempt_timeout_s)
        self.model = model

    def embed(self, texts: list[str], timeout: float) -> list[list[float]]:
        """One vector per text, in their order."""
        try:
            response = self._client.embeddings.create(model=self.model, input=texts, timeout=timeout)
        except ValueError as exc:  # a body that is not JSON (or not UTF-8)
            raise MalformedReply(f"not JSON ({type(exc).__name__})") from None
        data = getattr(response, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            raise MalformedReply(f"{len(data) if isinstance(data, list) else 'no'} vectors for {len(texts)} texts")
        rows = [getattr(item, "embedding", None) for item in sorted(data, key=lambda d: getattr(d, "index", 0))]
        if not all(isinstance(row, list) and row for row in rows):
            raise MalformedReply("an item without its vector")
        return rows  # type: ignore[return-value]

    def classify(self, exc: BaseException) -> Failure | None:
        return classify(exc)
