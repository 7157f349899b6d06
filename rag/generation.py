"""Answer generation: a chat model behind a provider (rag/providers), or the embedded extractive answerer.

The extractive answerer (rag/extractive.py) needs no model and no key: it quotes the spans of
the selected sources that answer the question, each with its citation. It cannot paraphrase,
combine facts or reason. A model is given those same spans as its sources (rag/sourcing.py),
as many as fit its context window in tokens (rag/fitting.py). Retries, deadlines and metrics are
the same for every provider: they read its classification of each failure
(rag/providers/protocol.py, rag/attempts.py).
"""
from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Protocol

from tenacity import retry

from rag import events
from rag.attempts import Transient, policy
from rag.check import CITATION, cited_numbers
from rag.config import LLMConfig
from rag.extractive import ExtractiveAnswerer
from rag.fitting import Counter, Fitted, PromptTooLong, estimate_tokens, fit, prompt_tokens, reply_tokens
from rag.prompt import Source, build_messages
from rag.providers import make_provider
from rag.providers.protocol import Failure, MalformedReply, Reply, TextSink, Usage, as_reply, failure_of

log = logging.getLogger(__name__)
# The most a token count or the window may take from an answer's deadline.
_COUNT_TIMEOUT_S = 5.0


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


class _TooLong(Exception):
    """The endpoint refused the prompt as over its context window (not retried as it was)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


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
        # The context window in tokens: the setting, else the endpoint's word (asked once), else
        # the window its refusal of a longer prompt named; None: not known (no fitting).
        self._window: int | None = endpoint.context_tokens or None
        self._window_asked = bool(self._window)

    async def aclose(self) -> None:
        await self._provider.aclose()

    async def count(self, text: str) -> int:
        """`text`'s tokens by the endpoint's tokenizer where it has one, else the estimate."""
        counter = getattr(self._provider, "count_tokens", None)
        counted = await counter(text, _COUNT_TIMEOUT_S) if counter is not None else None
        return counted if counted is not None else estimate_tokens(text)

    async def window(self) -> int | None:
        if not self._window_asked:
            self._window_asked = True
            asked = getattr(self._provider, "context_tokens", None)
            self._window = await asked(_COUNT_TIMEOUT_S) if asked is not None else None
        return self._window

    async def _fitted(self, question: str, sources: list[Source], history: list[tuple[str, str]]) -> Fitted | None:
        """The prompt fitted to the window (None: the window is not known, the prompt is sent as built)."""
        window = await self.window()
        if window is None:
            return None
        try:
            return await fit(question, sources, history, window - reply_tokens(window, self._endpoint.max_tokens),
                             _cached(self.count))
        except PromptTooLong as exc:
            raise ProviderError(f"the question does not fit the model's context window of {window} tokens ({exc})")

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """With `on_text` (and DOCSBOT_LLM_STREAM) the completion is streamed; an attempt that
        already passed text on is not retried (the reader would see it twice).

        A transient failure is retried up to `max_retries` times, after the provider's Retry-After
        or a jittered exponential backoff, unless that wait would end past the total deadline;
        then the last failure is a ProviderError carrying its Retry-After. A prompt the endpoint
        refuses as over a window it names is fitted to that window and sent once more."""
        s, provider = self._endpoint, self._provider
        streamed = on_text if s.stream else None
        emitted: list[float] = []  # when text was first passed on
        started = time.perf_counter()
        failure: Failure | None = None  # the last transient failure
        fitted = await self._fitted(question, sources, history)
        sink = _sink_for(streamed, fitted, len(sources))

        async def emit(piece: str) -> None:
            if not emitted:
                emitted.append(time.perf_counter() - started)
            await sink(piece)  # type: ignore[misc]

        deadline = time.monotonic() + s.total_timeout_s

        @retry(**policy(s.max_retries, deadline, "chat"))
        async def attempt(messages: list[dict[str, str]], max_tokens: int) -> Reply:
            """One request, bounded by the attempt timeout and by what is left of the deadline."""
            nonlocal failure
            remaining = deadline - time.monotonic()
            if remaining <= 0:  # the wait fitted the deadline, but the sleep overran it
                raise _unavailable(failure)
            timeout = min(s.attempt_timeout_s, remaining)
            events.attempted("chat")
            try:
                reply = (provider.generate(messages, max_tokens, timeout) if sink is None
                         else provider.stream(messages, max_tokens, timeout, emit))
                return as_reply(await asyncio.wait_for(reply, timeout=timeout + 0.5))
            except MalformedReply as exc:
                events.failed("chat", "other")
                raise ProviderError(f"the AI service sent a malformed reply ({exc})") from None
            except Exception as exc:
                known = failure_of(provider, exc)
                if known is None:
                    raise
                events.failed("chat", known.kind)
                if known.outcome == "too_long" and not emitted:
                    raise _TooLong(known) from None
                if known.outcome in ("refused", "too_long"):
                    raise ProviderError(f"the AI service refused the request ({known.detail})") from None
                if known.outcome == "failed":
                    raise ProviderError(f"the AI service failed ({known.detail})") from None
                if emitted:
                    raise ProviderError(f"the AI service failed mid-answer ({known.detail})") from None
                failure = known
                raise Transient(known) from exc

        try:
            try:
                reply = await attempt(*self._request(fitted, question, sources, history))
            except _TooLong as exc:
                if not exc.failure.context_tokens or self._window == exc.failure.context_tokens:
                    raise ProviderError(f"the AI service refused the request ({exc.failure.detail})") from None
                self._window = exc.failure.context_tokens  # learned: every later prompt is fitted to it
                fitted = await self._fitted(question, sources, history)
                sink = _sink_for(streamed, fitted, len(sources))
                reply = await attempt(*self._request(fitted, question, sources, history))
        except Transient as exc:
            raise _unavailable(exc.failure) from None
        except _TooLong as exc:
            raise ProviderError(f"the AI service refused the request ({exc.failure.detail})") from None
        return await self._answer(reply, fitted, len(sources), (question, sources, history),
                                  (emitted[0] if emitted else None, time.perf_counter() - started))

    def _request(self, fitted: Fitted | None, question: str, sources: list[Source],
                 history: list[tuple[str, str]]) -> tuple[list[dict[str, str]], int]:
        """The messages and the reply's max tokens: within the window when it is known."""
        if fitted is None or self._window is None:
            return build_messages(question, sources, history), self._endpoint.max_tokens
        return fitted.messages, reply_tokens(self._window, self._endpoint.max_tokens)

    async def _answer(self, reply: Reply, fitted: Fitted | None, given: int,
                      prompt: tuple[str, list[Source], list[tuple[str, str]]], seconds: tuple[float | None, float]
                      ) -> str:
        """The reply's text as the citation check is to read it, its tokens counted and logged."""
        usage = reply.usage or Usage(
            fitted.prompt_tokens if fitted else await prompt_tokens(build_messages(*prompt), self.count),
            await self.count(reply.text))
        events.events().llm_tokens(usage.prompt_tokens, usage.completion_tokens)
        text = reply.text
        if reply.finish_reason == "length":
            text = whole_sentences(text)
            if not text:
                raise ProviderError("the answer was cut off at its most tokens before its first sentence ended")
        sent = fitted.sources if fitted else given
        if sent < given:
            text = unseen_cited(text, sent)
        first, total = seconds
        log.info("llm answer: %d prompt + %d completion tokens (%s), finish %s, %d of %d sources sent, "
                 "first text after %s, %.2f s in all", usage.prompt_tokens, usage.completion_tokens,
                 "reported" if reply.usage else "counted", reply.finish_reason or "unsaid", sent, given,
                 f"{first:.2f} s" if first is not None else "-", total)
        return text


_SENTENCE_END = re.compile(r"[.!?:](?:\s*\[\d+(?:\s*,\s*\d+)*\])*(?=\s)|\n")


def whole_sentences(text: str) -> str:
    """A reply cut off at its most tokens, up to the end of its last whole sentence or line ("":
    none ended): the words after it are a sentence the model did not finish."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text + " ")]
    return text[:ends[-1]].rstrip() if ends else ""


def unseen_cited(text: str, sent: int) -> str:
    """`text` with each citation of a source the prompt left out (its number above `sent`) as [0]:
    it names no source given, and the citation check rejects the answer as it rejects any such."""
    if all(n <= sent for n in cited_numbers(text)):
        return text
    def numbers(m: re.Match[str]) -> str:
        return "[" + ", ".join(n if int(n) <= sent else "0" for n in re.split(r"\s*,\s*", m.group(1))) + "]"

    return CITATION.sub(numbers, text)


_OPEN_CITATION = re.compile(r"\[[\d,\s]*$")


def _sink_for(sink: TextSink | None, fitted: Fitted | None, given: int) -> TextSink | None:
    """`sink`, or when the prompt left sources out, `sink` with each citation of one of them
    already [0] (see unseen_cited), so the stream shows none of it either: a citation still open
    at a piece's end waits for the next piece."""
    if sink is None or fitted is None or fitted.sources >= given:
        return sink
    sent, held = fitted.sources, [""]

    async def renumbered(piece: str) -> None:
        text = held[0] + piece
        open_at = m.start() if (m := _OPEN_CITATION.search(text)) else len(text)
        held[0] = text[open_at:]
        if open_at:
            await sink(unseen_cited(text[:open_at], sent))

    return renumbered


def _cached(count: Counter) -> Counter:
    """`count` asked once per text (fitting counts the same system prompt and sources again)."""
    known: dict[str, int] = {}

    async def counted(text: str) -> int:
        if text not in known:
            known[text] = await count(text)
        return known[text]

    return counted



def make_generator(endpoint: LLMConfig) -> Generator:
    return LLMChat(endpoint) if endpoint.enabled else ExtractiveAnswerer()
