"""What `rag` reports as it works, for an application's metrics: LLM attempts, failures, retries.

`rag` knows no metrics library. It calls the installed `RagEvents`, which does nothing until the
application installs its own (docsbot counts them in Prometheus, foundation/observability/metrics.py).
"""
from __future__ import annotations

from typing import Protocol


class RagEvents(Protocol):
    def llm_attempt(self) -> None:
        """A chat-completion attempt is being sent."""

    def llm_failed(self, kind: str) -> None:
        """An attempt failed; `kind` is one of LLM_ERROR_KINDS."""

    def llm_retried(self, kind: str) -> None:
        """An attempt that failed with `kind` is retried."""


LLM_ERROR_KINDS = ("timeout", "429", "5xx", "other")


class _Quiet:
    def llm_attempt(self) -> None:
        pass

    def llm_failed(self, kind: str) -> None:
        pass

    def llm_retried(self, kind: str) -> None:
        pass


_installed: RagEvents = _Quiet()


def install(events: RagEvents) -> None:
    global _installed
    _installed = events


def events() -> RagEvents:
    return _installed

