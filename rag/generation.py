"""Answer generation: any OpenAI-compatible chat endpoint, or the embedded extractive answerer.

The extractive answerer needs no model and no key: it quotes the sentences of the selected
sources that share the most (rare) words with the question, each with its citation. It cannot
paraphrase, combine facts or reason; it declines when no sentence shares a content word.
"""
from __future__ import annotations

import asyncio
import email.utils
import math
import random
import re
import time
from collections import Counter
from typing import Protocol

import openai

from docsbot.settings import Settings
from rag.prompt import DECLINE_MARKER, Source, build_messages


class ProviderError(RuntimeError):
    """The LLM provider failed after bounded retries; retry_after is the provider's hint, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class Generator(Protocol):
    name: str

    async def generate(self, question: str, sources: list[Source], history: list[tuple[str, str]]) -> str: ...


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


_RETRYABLE = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError, openai.InternalServerError)


class OpenAIChat:
    """Chat completions with a per-attempt timeout, a total deadline, and bounded retries with
    exponential backoff that honour Retry-After."""

    def __init__(self, settings: Settings) -> None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "unused"
        self._client = openai.AsyncOpenAI(api_key=key, base_url=settings.openai_base_url, max_retries=0)
        self.name = settings.chat_model
        self._settings = settings

    async def generate(self, question: str, sources: list[Source], history: list[tuple[str, str]]) -> str:
        s = self._settings
        messages = build_messages(question, sources, history)
        deadline = time.monotonic() + s.llm_total_timeout_s
        retry_after: float | None = None
        problem = "no attempt was made"
        for attempt in range(s.llm_max_retries + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            timeout = min(s.llm_attempt_timeout_s, remaining)
            try:
                response = await asyncio.wait_for(
                    self._client.chat.completions.create(
                        model=self.name,
                        messages=messages,
                        temperature=0,
                        max_tokens=s.llm_max_tokens,
                        timeout=timeout,
                    ),
                    timeout=timeout + 0.5,
                )
                return response.choices[0].message.content or ""
            except (asyncio.TimeoutError, *_RETRYABLE) as exc:
                problem = _describe(exc)
                retry_after = retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None))
            except openai.APIStatusError as exc:
                raise ProviderError(f"the AI service refused the request ({_describe(exc)})") from None
            except openai.OpenAIError as exc:
                raise ProviderError(f"the AI service failed ({_describe(exc)})") from None
            delay = retry_after if retry_after is not None else 0.5 * 2**attempt * (1 + random.random() / 2)
            if attempt == s.llm_max_retries or delay > deadline - time.monotonic():
                break
            await asyncio.sleep(delay)
        raise ProviderError(f"the AI service is unavailable ({problem})", retry_after)


def _describe(exc: BaseException) -> str:
    status = getattr(exc, "status_code", None)
    if isinstance(exc, asyncio.TimeoutError) or isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    return f"HTTP {status}" if status else type(exc).__name__


_WORD = re.compile(r"[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]")
_STOP = frozenset(
    """a about above after again all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here
    hers him his how i if in into is it its itself just me more most my no nor not of off on once only or
    other our ours out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while who whom why
    will with would you your yours us tell know need want please anyone someone get got make made use used
    using way ok okay hi hey thanks thank docs doc documentation""".split()
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(])")


def content_terms(text: str) -> list[str]:
    """Lower-cased words without stop words, crudely stemmed (plural and -ing/-ed endings)."""
    terms = []
    for word in _WORD.findall(text.lower()):
        if word in _STOP:
            continue
        for suffix in ("ing", "ed", "es", "s"):
            if len(word) > len(suffix) + 3 and word.endswith(suffix):
                word = word[: -len(suffix)]
                break
        terms.append(word)
    return terms


def split_passages(text: str) -> list[str]:
    """Sentences, list items, table rows and whole small code blocks of a chunk."""
    passages: list[str] = []
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        if block.startswith(("```", "~~~")):
            if len(block) <= 600:
                passages.append(block)
            continue
        for line in block.split("\n"):
            line = line.strip()
            if not line or re.fullmatch(r"\|?[\s:|-]+\|?", line):
                continue
            passages.extend(p.strip() for p in _SENTENCE.split(line) if p.strip())
    return passages


class ExtractiveAnswerer:
    """The embedded default generator: quotes the best-matching sentences with citations."""

    name = "extractive"

    def __init__(self, max_passages: int = 3, max_chars: int = 700) -> None:
        self.max_passages = max_passages
        self.max_chars = max_chars

    async def generate(self, question: str, sources: list[Source], history: list[tuple[str, str]]) -> str:
        asked = set(content_terms(question))
        if history:
            asked |= {t for speaker, text in history if speaker == "user" for t in content_terms(text)}
        scored: list[tuple[float, int, int, str]] = []
        passages = [(s.n, p) for s in sources for p in split_passages(s.text)]
        heading_terms = {s.n: set(content_terms(f"{s.title} {s.section}")) for s in sources}
        df = Counter(t for _, p in passages for t in set(content_terms(p)))
        for order, (n, passage) in enumerate(passages):
            terms = set(content_terms(passage))
            overlap = asked & terms
            if not overlap or passage.startswith("#"):
                continue
            score = sum(math.log(1 + len(passages) / df[t]) for t in overlap)
            score += 0.3 * len(asked & heading_terms[n]) + 0.5 / n
            scored.append((score, order, n, passage))
        if not scored:
            return DECLINE_MARKER
        scored.sort(key=lambda item: (-item[0], item[1]))
        best = scored[0][0]
        picked = [item for item in scored[: self.max_passages] if item[0] >= 0.5 * best]
        lines, used = [], 0
        for _, _, n, passage in sorted(picked, key=lambda item: item[1]):
            if lines and used + len(passage) > self.max_chars:
                continue
            used += len(passage)
            lines.append(f"{passage} [{n}]" if not passage.startswith(("```", "~~~")) else f"{passage}\n[{n}]")
        return "\n".join(lines)


def make_generator(settings: Settings) -> Generator:
    return OpenAIChat(settings) if settings.use_llm else ExtractiveAnswerer()
