"""What `rag` reported (rag/events.py), recorded for a test: installed by the `recorded` fixture's
helper, the previous events put back after."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from rag import RagEvents, install_events
from rag.events import events


@dataclass
class Recorded:
    attempts: int = 0
    failed: list[str] = field(default_factory=list)
    retried: list[str] = field(default_factory=list)
    tokens: list[tuple[int, int]] = field(default_factory=list)  # (prompt, completion) per completion
    embedding_attempts: int = 0
    embedding_failures: list[str] = field(default_factory=list)
    embedding_retries: list[str] = field(default_factory=list)

    def llm_attempt(self) -> None:
        self.attempts += 1

    def llm_failed(self, kind: str) -> None:
        self.failed.append(kind)

    def llm_retried(self, kind: str) -> None:
        self.retried.append(kind)

    def llm_tokens(self, prompt: int, completion: int) -> None:
        self.tokens.append((prompt, completion))

    def embedding_attempt(self) -> None:
        self.embedding_attempts += 1

    def embedding_failed(self, kind: str) -> None:
        self.embedding_failures.append(kind)

    def embedding_retried(self, kind: str) -> None:
        self.embedding_retries.append(kind)


@contextmanager
def recording() -> Iterator[Recorded]:
    before: RagEvents = events()
    recorder = Recorded()
    install_events(recorder)
    try:
        yield recorder
    finally:
        install_events(before)
