"""What `rag` reports as it works, for an application's metrics: LLM attempts, failures, retries
and tokens, and the same of an embeddings endpoint.

`rag` knows no metrics library. It calls the installed `RagEvents`, which does nothing until the
application installs its own (docsbot counts them in Prometheus, foundation/observability/metrics.py).
"""
from __future__ import annotations

from typing import Literal, Protocol

Call = Literal["chat", "embeddings"]  # which of an endpoint's APIs an attempt went to


class RagEvents(Protocol):
    def llm_attempt(self) -> None:
        """A chat-completion attempt is being sent."""

    def llm_failed(self, kind: str) -> None:
        """An attempt failed; `kind` is one of LLM_ERROR_KINDS."""

    def llm_retried(self, kind: str) -> None:
        """An attempt that failed with `kind` is retried."""

    def llm_tokens(self, prompt: int, completion: int) -> None:
        """A completion's tokens (as the endpoint reported them, else as counted)."""

    def embedding_attempt(self) -> None:
        """A request to an embeddings endpoint is being sent."""

    def embedding_failed(self, kind: str) -> None:
        """An embeddings request failed; `kind` is one of LLM_ERROR_KINDS."""

    def embedding_retried(self, kind: str) -> None:
        """An embeddings request that failed with `kind` is retried."""


LLM_ERROR_KINDS = ("timeout", "429", "5xx", "other")


class _Quiet:
    def llm_attempt(self) -> None:
        pass

    def llm_failed(self, kind: str) -> None:
        pass

    def llm_retried(self, kind: str) -> None:
        pass

    def llm_tokens(self, prompt: int, completion: int) -> None:
        pass

    def embedding_attempt(self) -> None:
        pass

    def embedding_failed(self, kind: str) -> None:
        pass

    def embedding_retried(self, kind: str) -> None:
        pass


_installed: RagEvents = _Quiet()


def install(events: RagEvents) -> None:
    global _installed
    _installed = events


def events() -> RagEvents:
    return _installed


def attempted(call: Call) -> None:
    (events().llm_attempt if call == "chat" else events().embedding_attempt)()


def failed(call: Call, kind: str) -> None:
    (events().llm_failed if call == "chat" else events().embedding_failed)(kind)


def retried(call: Call, kind: str) -> None:
    (events().llm_retried if call == "chat" else events().embedding_retried)(kind)
