"""Answer generation: any OpenAI-compatible chat endpoint, or the embedded extractive answerer.

The extractive answerer (rag/extractive.py) needs no model and no key: it quotes the spans of
the selected sources that answer the question, each with its citation. It cannot paraphrase,
combine facts or reason. A model is given those same spans as its sources (rag/sourcing.py).
"""
from __future__ import annotations

import asyncio
import email.utils
import random
import time
from collections.abc import Awaitable, Callable
from typing import Protocol

from tenacity import RetryCallState, retry, retry_if_exception_type, stop_after_attempt, wait_exponential
from tenacity.stop import stop_base

from rag import events
from rag.completion import MalformedReply, body_text, message_text, stream_pieces
from rag.config import LLMConfig
from rag.extractive import ExtractiveAnswerer
from rag.prompt import Source, build_messages
from rag.llm_clients import AsyncChatClient


class ProviderError(RuntimeError):
    """The LLM provider failed after bounded retries; retry_after is the provider's hint, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


TextSink = Callable[[str], Awaitable[None]]  # receives the answer's text as it is generated


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


def _transient() -> tuple[type[BaseException], ...]:
    """Failures worth another attempt: the same request may well succeed a moment later. (openai is
    imported where an endpoint is called: the extractive answerer's commands never load it, 0.3-0.6 s.)"""
    import openai

    return (asyncio.TimeoutError, openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
            openai.InternalServerError)


_BACKOFF = wait_exponential(multiplier=0.5)  # 0.5 s, 1 s, 2 s, … before the jitter


def _failed_with(retry_state: RetryCallState) -> BaseException:
    """What the attempt just made failed with (tenacity waits and sleeps only after a failure)."""
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    assert exc is not None
    return exc


def _retry_after(failure: BaseException | None) -> float | None:
    """The provider's Retry-After on a failed attempt's response, if it sent one."""
    return retry_after_seconds(getattr(getattr(failure, "response", None), "headers", None))


def _provider_wait(retry_state: RetryCallState) -> float:
    """The provider's Retry-After, else exponential backoff with up to 50% jitter."""
    retry_after = _retry_after(_failed_with(retry_state))
    return retry_after if retry_after is not None else _BACKOFF(retry_state) * (1 + random.random() / 2)


def _count_retry(retry_state: RetryCallState) -> None:
    events.events().llm_retried(events.llm_error_kind(_failed_with(retry_state)))


class _WaitPastDeadline(stop_base):
    """Stop when the wait before the next attempt would end after `deadline` (time.monotonic)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.upcoming_sleep > self.deadline - time.monotonic()


def _unavailable(failure: BaseException | None) -> ProviderError:
    """The error when the attempts are spent or the deadline is reached: it names the last
    transient failure (None: the deadline passed before the first attempt) with its Retry-After."""
    if failure is None:
        return ProviderError("the AI service is unavailable (no attempt was made)")
    return ProviderError(f"the AI service is unavailable ({_describe(failure)})", _retry_after(failure))


class OpenAIChat:
    """Chat completions with a per-attempt timeout, a total deadline, and bounded retries with
    exponential backoff that honour Retry-After. A reply that is not a completion (garbage, an
    HTML page, no choices, a stream that breaks off) is a ProviderError like an outage."""

    reads_spans = True

    def __init__(self, endpoint: LLMConfig) -> None:
        self._chat = AsyncChatClient(endpoint)
        self.name = endpoint.chat_model
        self._endpoint = endpoint

    async def aclose(self) -> None:
        await self._chat.aclose()

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """With `on_text` (and DOCSBOT_LLM_STREAM) the completion is streamed; an attempt that
        already passed text on is not retried (the reader would see it twice).

        A transient failure is retried up to `max_retries` times, after the provider's Retry-After
        or a jittered exponential backoff, unless that wait would end past the total deadline;
        then the last failure is a ProviderError carrying its Retry-After."""
        import openai

        s = self._endpoint
        transient = _transient()
        messages = build_messages(question, sources, history)
        sink = on_text if s.stream else None
        emitted = False
        failure: BaseException | None = None  # the last transient failure

        async def emit(piece: str) -> None:
            nonlocal emitted
            emitted = True
            await sink(piece)  # type: ignore[misc]

        deadline = time.monotonic() + s.total_timeout_s

        @retry(
            retry=retry_if_exception_type(transient),
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
                request = dict(model=self.name, messages=messages, temperature=0, max_tokens=s.max_tokens,
                               timeout=timeout)
                reply = self._whole(request) if sink is None else self._streamed(request, emit)
                return await asyncio.wait_for(reply, timeout=timeout + 0.5)
            except transient as exc:
                events.llm_failed(exc)
                if emitted:
                    raise ProviderError(f"the AI service failed mid-answer ({_describe(exc)})") from None
                failure = exc
                raise
            except openai.APIStatusError as exc:
                events.llm_failed(exc)
                raise ProviderError(f"the AI service refused the request ({_describe(exc)})") from None
            except openai.OpenAIError as exc:
                events.llm_failed(exc)
                raise ProviderError(f"the AI service failed ({_describe(exc)})") from None
            except MalformedReply as exc:
                events.llm_failed(exc)
                raise ProviderError(f"the AI service sent a malformed reply ({exc})") from None

        try:
            return await attempt()
        except transient as exc:
            raise _unavailable(exc) from None

    async def _whole(self, request: dict) -> str:
        """One completion, not streamed."""
        try:
            response = await self._chat.client.chat.completions.create(**request)
        except ValueError as exc:  # a JSON body that is not JSON (or not UTF-8)
            raise MalformedReply(f"not JSON ({type(exc).__name__})") from None
        return message_text(response)

    async def _streamed(self, request: dict, emit: TextSink) -> str:
        """One streamed completion: every text delta goes to `emit`; returns the whole text.

        An endpoint that ignores `stream` answers with one JSON body: its text is returned (not
        emitted), and the next request is streamed again. A stream that ends before a
        finish_reason broke off: the text so far is not an answer."""
        parts: list[str] = []
        async with await self._chat.client.chat.completions.create(**request, stream=True) as stream:
            if "json" in stream.response.headers.get("content-type", ""):
                return body_text(await stream.response.aread())
            async for piece, finished in stream_pieces(stream):
                if piece:
                    parts.append(piece)
                    await emit(piece)
                if finished:
                    return "".join(parts)
        raise MalformedReply("the stream ended before the answer did")


def _describe(exc: BaseException) -> str:
    import openai

    status = getattr(exc, "status_code", None)
    if isinstance(exc, asyncio.TimeoutError) or isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    return f"HTTP {status}" if status else type(exc).__name__


def make_generator(endpoint: LLMConfig) -> Generator:
    return OpenAIChat(endpoint) if endpoint.enabled else ExtractiveAnswerer()
