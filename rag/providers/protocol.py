"""What a chat provider is to the rest of `rag`: one request at a time, and what its failures mean.

Retries, deadlines, metrics and the extractive fallback (rag/generation.py) and the follow-up
rewriter (rag/followup.py) only speak this protocol: a provider turns messages into text with its
own client and wire format, and says of each of its exceptions whether another attempt may help.
"""
from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal, Protocol

Messages = list[dict[str, str]]  # {"role": "system" | "user" | "assistant", "content": text}, in order
TextSink = Callable[[str], Awaitable[None]]  # receives the answer's text as it is generated


class MalformedReply(Exception):
    """The endpoint answered, but not with a chat completion."""


@dataclass(frozen=True)
class Usage:
    """Tokens of one completion: the prompt's and the reply's."""

    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Reply:
    """A completion: its text, why it ended ("stop"; "length": cut off at max_tokens; "" when the
    endpoint did not say) and the tokens the endpoint reported (None: it reported none, as
    llama.cpp's server does when it streams). A provider may return the text alone."""

    text: str
    finish_reason: str = ""
    usage: Usage | None = None


def as_reply(result: "str | Reply") -> Reply:
    return Reply(result) if isinstance(result, str) else result


@dataclass(frozen=True)
class Failure:
    """A provider's exception as the retry logic reads it.

    outcome: `transient` (the same request may well succeed a moment later: a timeout, no
    connection, 429, 5xx), `refused` (the endpoint answered with an error status: another try
    gets the same), `too_long` (the prompt and the reply do not fit the model's context window:
    a shorter prompt may), `failed` (anything else the client raised). `detail` is what an error
    message says of it ("timed out", "connection failed", "HTTP 503"); `status` the HTTP status,
    if any; `retry_after` the endpoint's hint in seconds, if it sent one; `context_tokens` the
    window a `too_long` refusal named, if it did."""

    outcome: Literal["transient", "refused", "too_long", "failed"]
    detail: str
    status: int | None = None
    retry_after: float | None = None
    timed_out: bool = False
    context_tokens: int | None = None

    @property
    def kind(self) -> str:
        """timeout | 429 | 5xx | other: the metrics' label (rag/events.py LLM_ERROR_KINDS)."""
        if self.timed_out:
            return "timeout"
        if self.status == 429:
            return "429"
        return "5xx" if self.status is not None and self.status >= 500 else "other"


@dataclass(frozen=True)
class ProbeFinding:
    """One line of `docsbot doctor` about the provider: ok, warning or failed, and the fix."""

    check: str
    status: Literal["ok", "warning", "failed"]
    detail: str
    fix: str = ""


@dataclass(frozen=True)
class Description:
    """The provider as `docsbot doctor` shows it; `probe(timeout_s)` asks the endpoint whether it
    works as configured, at the cost of at most a one-token completion."""

    provider: str
    endpoint: str
    model: str
    probe: Callable[[float], list[ProbeFinding]]


class ChatProvider(Protocol):
    """One chat model behind one endpoint. `generate` and `stream` make one attempt each, bounded
    by `timeout` seconds; a reply that is not a completion raises MalformedReply. They return the
    Reply, or its text alone (no finish reason, no usage: rag/generation.py counts the tokens).

    A provider may also count tokens as its model does and know the model's context window
    (TokenCounting): the prompt is then fitted to the window in tokens (rag/fitting.py)."""

    model: str

    async def generate(self, messages: Messages, max_tokens: int, timeout: float) -> str | Reply:
        """The whole reply."""
        ...

    async def stream(self, messages: Messages, max_tokens: int, timeout: float, emit: TextSink) -> str | Reply:
        """The reply, each piece of its text passed to `emit` as it arrives (an endpoint that
        ignores streaming may return the whole text without emitting it)."""
        ...

    def classify(self, exc: BaseException) -> Failure | None:
        """What one of this provider's exceptions means; None: not the provider's (a bug, raised on)."""
        ...

    def describe(self) -> Description:
        ...

    async def aclose(self) -> None:
        """Close the connections (the client reopens on next use)."""
        ...


class TokenCounting(Protocol):
    """What a provider may add: tokens counted by the endpoint's own tokenizer, and the model's
    context window as the endpoint tells it (None: it cannot say)."""

    async def count_tokens(self, text: str, timeout: float) -> int | None:
        ...

    async def context_tokens(self, timeout: float) -> int | None:
        ...


def failure_of(provider: ChatProvider, exc: BaseException) -> Failure | None:
    """The provider's reading of `exc`; a caller's own timeout (asyncio's) is transient for any."""
    if isinstance(exc, asyncio.TimeoutError):
        return Failure("transient", "timed out", timed_out=True)
    return provider.classify(exc)


def retry_after_seconds(headers: object) -> float | None:
    """Retry-After as seconds (delta-seconds or HTTP date), also OpenAI's retry-after-ms."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    if (ms := get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None
