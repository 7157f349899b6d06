"""Answer generation: a chat model behind a provider (rag/providers), or the embedded extractive answerer.

The extractive answerer (rag/extractive.py) needs no model and no key: it quotes the spans of
the selected sources that answer the question, each with its citation. It cannot paraphrase,
combine facts or reason. A model is given those same spans as its sources (rag/sourcing.py).
Retries, deadlines and metrics are the same for every provider: they read its classification
of each failure (rag/providers/protocol.py).
"""
from __future__ import annotations

import asyncio
import random
import time
from typing import Protocol

from tenacity import RetryCallState, retry, retry_if_exception_type, stop_after_attempt, wait_exponential
from tenacity.stop import stop_base

from rag import events
from rag.config import LLMConfig
from rag.extractive import ExtractiveAnswerer
from rag.prompt import Source, build_messages
from rag.providers import make_provider
from rag.providers.protocol import Failure, MalformedReply, TextSink, failure_of


class ProviderError(RuntimeError):
    """The LLM provider failed after bounded retries; retry_after is the provider's hint, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Generator(Protocol):
    name: str
    # True: the engine gives it the spans the extractive answerer would quote (rag/sourcing.py);
    # False: the chunks (the extractive answerer chooses its spans from them itself).
    reads_spans: bool

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """The whole answer; `on_text`, when given, also gets its pieces as they are generated
        (a generator that cannot stream never calls it)."""
        ...


_BACKOFF = wait_exponential(multiplier=0.5)  # 0.5 s, 1 s, 2 s, … before the jitter


class _Transient(Exception):
    """An attempt failed in a way the next one may not (tenacity retries on it)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


def _failed_with(retry_state: RetryCallState) -> Failure:
    """What the attempt just made failed with (tenacity waits and sleeps only after a failure)."""
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    assert isinstance(exc, _Transient)
    return exc.failure


def _provider_wait(retry_state: RetryCallState) -> float:
    """The provider's Retry-After, else exponential backoff with up to 50% jitter."""
    retry_after = _failed_with(retry_state).retry_after
    return retry_after if retry_after is not None else _BACKOFF(retry_state) * (1 + random.random() / 2)


def _count_retry(retry_state: RetryCallState) -> None:
    events.events().llm_retried(_failed_with(retry_state).kind)


class _WaitPastDeadline(stop_base):
    """Stop when the wait before the next attempt would end after `deadline` (time.monotonic)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.upcoming_sleep > self.deadline - time.monotonic()


def _unavailable(failure: Failure | None) -> ProviderError:
    """The error when the attempts are spent or the deadline is reached: it names the last
    transient failure (None: the deadline passed before the first attempt) with its Retry-After."""
    if failure is None:
        return ProviderError("the AI service is unavailable (no attempt was made)")
    return ProviderError(f"the AI service is unavailable ({failure.detail})", failure.retry_after)


class LLMChat:
    """A chat provider's completions with a per-attempt timeout, a total deadline, and bounded
    retries with exponential backoff that honour Retry-After. A reply that is not a completion
    (garbage, an HTML page, no choices, a stream that breaks off) is a ProviderError like an outage."""

    reads_spans = True

    def __init__(self, endpoint: LLMConfig) -> None:
        self._provider = make_provider(endpoint)
        self.name = self._provider.model
        self._endpoint = endpoint

    async def aclose(self) -> None:
        await self._provider.aclose()

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """With `on_text` (and DOCSBOT_LLM_STREAM) the completion is streamed; an attempt that
        already passed text on is not retried (the reader would see it twice).

        A transient failure is retried up to `max_retries` times, after the provider's Retry-After
        or a jittered exponential backoff, unless that wait would end past the total deadline;
        then the last failure is a ProviderError carrying its Retry-After."""
        s, provider = self._endpoint, self._provider
        messages = build_messages(question, sources, history)
        sink = on_text if s.stream else None
        emitted = False
        failure: Failure | None = None  # the last transient failure

        async def emit(piece: str) -> None:
            nonlocal emitted
            emitted = True
            await sink(piece)  # type: ignore[misc]

        deadline = time.monotonic() + s.total_timeout_s

        @retry(
            retry=retry_if_exception_type(_Transient),
            stop=stop_after_attempt(s.max_retries + 1) | _WaitPastDeadline(deadline),
            wait=_provider_wait,
            before_sleep=_count_retry,
            reraise=True,
        )
        async def attempt() -> str:
            """One request, bounded by the attempt timeout and by what is left of the deadline."""
            nonlocal failure
            remaining = deadline - time.monotonic()
            if remaining <= 0:  # the wait fitted the deadline, but the sleep overran it
                raise _unavailable(failure)
            timeout = min(s.attempt_timeout_s, remaining)
            events.events().llm_attempt()
            try:
                reply = (provider.generate(messages, s.max_tokens, timeout) if sink is None
                         else provider.stream(messages, s.max_tokens, timeout, emit))
                return await asyncio.wait_for(reply, timeout=timeout + 0.5)
            except MalformedReply as exc:
                events.events().llm_failed("other")
                raise ProviderError(f"the AI service sent a malformed reply ({exc})") from None
            except Exception as exc:
                known = failure_of(provider, exc)
                if known is None:
                    raise
                events.events().llm_failed(known.kind)
                if known.outcome == "refused":
                    raise ProviderError(f"the AI service refused the request ({known.detail})") from None
                if known.outcome == "failed":
                    raise ProviderError(f"the AI service failed ({known.detail})") from None
                if emitted:
                    raise ProviderError(f"the AI service failed mid-answer ({known.detail})") from None
                failure = known
                raise _Transient(known) from exc

        try:
            return await attempt()
        except _Transient as exc:
            raise _unavailable(exc.failure) from None


def make_generator(endpoint: LLMConfig) -> Generator:
    return LLMChat(endpoint) if endpoint.enabled else ExtractiveAnswerer()
