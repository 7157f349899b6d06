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
from collections.abc import Awaitable, Callable
from typing import Protocol

import openai

from docsbot.observability import metrics
from docsbot.settings import Settings
from rag.prompt import DECLINE_MARKER, Source, build_messages


class ProviderError(RuntimeError):
    """The LLM provider failed after bounded retries; retry_after is the provider's hint, if any."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


TextSink = Callable[[str], Awaitable[None]]  # receives the answer's text as it is generated


class Generator(Protocol):
    name: str

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


_RETRYABLE = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError, openai.InternalServerError)


class OpenAIChat:
    """Chat completions with a per-attempt timeout, a total deadline, and bounded retries with
    exponential backoff that honour Retry-After."""

    def __init__(self, settings: Settings) -> None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "unused"
        self._client = openai.AsyncOpenAI(api_key=key, base_url=settings.openai_base_url, max_retries=0)
        self.name = settings.chat_model
        self._settings = settings
        self._endpoint_streams = True  # until an endpoint answers a streamed request with one body

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """With `on_text` (and DOCSBOT_LLM_STREAM) the completion is streamed; an attempt that
        already passed text on is not retried (the reader would see it twice)."""
        s = self._settings
        messages = build_messages(question, sources, history)
        sink = on_text if s.llm_stream and self._endpoint_streams else None
        emitted = False

        async def emit(piece: str) -> None:
            nonlocal emitted
            emitted = True
            await sink(piece)  # type: ignore[misc]

        deadline = time.monotonic() + s.llm_total_timeout_s
        retry_after: float | None = None
        problem = "no attempt was made"
        for attempt in range(s.llm_max_retries + 1):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            timeout = min(s.llm_attempt_timeout_s, remaining)
            metrics.LLM_CALLS.inc()
            try:
                request = dict(model=self.name, messages=messages, temperature=0, max_tokens=s.llm_max_tokens,
                               timeout=timeout)
                if sink is None:
                    response = await asyncio.wait_for(self._client.chat.completions.create(**request),
                                                      timeout=timeout + 0.5)
                    return response.choices[0].message.content or ""
                return await asyncio.wait_for(self._streamed(request, emit), timeout=timeout + 0.5)
            except (asyncio.TimeoutError, *_RETRYABLE) as exc:
                kind = metrics.llm_failed(exc)
                problem = _describe(exc)
                retry_after = retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None))
                if emitted:
                    raise ProviderError(f"the AI service failed mid-answer ({problem})") from None
            except openai.APIStatusError as exc:
                metrics.llm_failed(exc)
                raise ProviderError(f"the AI service refused the request ({_describe(exc)})") from None
            except openai.OpenAIError as exc:
                metrics.llm_failed(exc)
                raise ProviderError(f"the AI service failed ({_describe(exc)})") from None
            delay = retry_after if retry_after is not None else 0.5 * 2**attempt * (1 + random.random() / 2)
            if attempt == s.llm_max_retries or delay > deadline - time.monotonic():
                break
            metrics.LLM_RETRIES.labels(kind).inc()
            await asyncio.sleep(delay)
        raise ProviderError(f"the AI service is unavailable ({problem})", retry_after)

    async def _streamed(self, request: dict, emit: TextSink) -> str:
        """One streamed completion: every text delta goes to `emit`; returns the whole text.

        An endpoint that ignores `stream` answers with one JSON body, which reads as a stream of
        no events: the request is then made again without streaming, and never streamed again."""
        parts: list[str] = []
        events = 0
        stream = await self._client.chat.completions.create(**request, stream=True)
        async for chunk in stream:
            events += 1
            piece = chunk.choices[0].delta.content if chunk.choices else None
            if piece:
                parts.append(piece)
                await emit(piece)
        if not events:
            self._endpoint_streams = False
            response = await self._client.chat.completions.create(**request)
            return response.choices[0].message.content or ""
        return "".join(parts)


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
    using way ok okay hi hey thanks thank docs doc documentation whats
    long take takes usually often around stay still last said one put right show far instead difference
    whose tomorrow today says none might miss since getting fired day days week weeks time times new first
    back best really actually go going see look find like good bad happen happens thing things something
    anything everything much many few lot lots kind sort also even ever never always sometimes exactly
    roughly usual normal normally typical typically yet already soon later early late next previous ago
    somebody anybody everyone people person mean means""".split()
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
        if word not in _STOP:
            terms.append(word)
    return terms


def split_passages(text: str) -> list[str]:
    """What the extractive answerer may quote from a chunk: sentences, a lead-in sentence ending
    in ':' together with the list that follows it, list items, table rows spelled out with their
    column names, and whole small code blocks."""
    passages: list[str] = []
    open_list = False  # the last passage is a lead-in that following list items join
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        if block.startswith(("```", "~~~")):
            if len(block) <= 600:
                passages.append(block)
            open_list = False
            continue
        lines = [line.strip() for line in block.split("\n") if line.strip()]
        if all(line.startswith("|") for line in lines):
            passages.extend(_table_rows(lines))
            open_list = False
            continue
        for unit in _line_units(lines):
            if _ITEM.match(unit):
                if open_list and len(passages[-1]) + len(unit) <= 700:
                    passages[-1] += "\n" + unit
                    continue
                passages.append(unit)
                open_list = False
                continue
            sentences = [p.strip() for p in _SENTENCE.split(unit) if p.strip()]
            passages.extend(sentences)
            open_list = bool(sentences) and sentences[-1].endswith(":")
    return passages


_ITEM = re.compile(r"^(?:[-*+]\s|\d+[.)]\s)")
_TABLE_RULE = re.compile(r"\|?[\s:|-]+\|?")


def _line_units(lines: list[str]) -> list[str]:
    """List items stand alone; soft-wrapped paragraph lines are joined."""
    units: list[str] = []
    for line in lines:
        if units and not _ITEM.match(line):
            units[-1] += " " + line
        else:
            units.append(line)
    return units


def _table_rows(lines: list[str]) -> list[str]:
    """Each data row as 'Column: value; Column: value' (a lone row means little without them)."""
    cells = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if not _TABLE_RULE.fullmatch(line)]
    if len(cells) < 2:
        return [" ".join(c for c in cells[0] if c)] if cells else []
    header, rows = cells[0], cells[1:]
    return ["; ".join(f"{name}: {value}" if name else value for name, value in zip(header, row) if value) for row in rows]


def missing_terms(question: str, sources: list[Source]) -> tuple[int, int]:
    """(missing, asked): the question's content words that no source contains (prefix match both
    ways, so 'deploy' finds 'deployment'). Many missing words mean the docs talk about something else."""
    asked = {t for t in content_terms(question) if len(t) >= 3 and not any(ch.isdigit() for ch in t)}
    found = {t for s in sources for t in content_terms(f"{s.title} {s.section} {s.text}")}
    return len(asked - matched_terms(asked, found)), len(asked)


def matched_terms(asked: set[str], words: set[str]) -> set[str]:
    """Question terms found among words, by prefix either way ('postgr' finds 'postgresql')."""
    return {t for t in asked if any(w.startswith(t) or (len(w) >= 4 and t.startswith(w)) for w in words)}


class ExtractiveAnswerer:
    """The embedded default generator: quotes the best-matching sentences with citations.

    It declines when two or more (and at least half) of the question's content words appear in no
    source, or a quarter do and even the best source is only a moderate match (tuned on
    eval/golden.jsonl)."""

    name = "extractive"

    def __init__(self, max_passages: int = 3, max_chars: int = 700, moderate_similarity: float = 0.5) -> None:
        self.max_passages = max_passages
        self.max_chars = max_chars
        self.moderate_similarity = moderate_similarity

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """Never streams: the quotes are known at once, so `on_text` is not called."""
        missing, total = missing_terms(question, sources)
        share = missing / total if total else 0.0
        best = max((s.similarity for s in sources), default=0.0)
        if (missing >= 2 and share >= 0.5) or (share >= 0.25 and best < self.moderate_similarity):
            return DECLINE_MARKER
        asked = set(content_terms(question))
        if history:
            asked |= {t for speaker, text in history if speaker == "user" for t in content_terms(text)}
        scored: list[tuple[float, int, int, str]] = []
        passages = [(s.n, p, matched_terms(asked, set(content_terms(p)))) for s in sources for p in split_passages(s.text)]
        in_heading = {s.n: matched_terms(asked, set(content_terms(f"{s.title} {s.section}"))) for s in sources}
        df = Counter(t for _, _, overlap in passages for t in overlap)
        for order, (n, passage, overlap) in enumerate(passages):
            if not overlap or passage.startswith("#"):
                continue
            score = sum(math.log(1 + len(passages) / df[t]) for t in overlap)
            score += 0.3 * len(in_heading[n]) + 0.5 / n
            scored.append((score, order, n, passage))
        if not scored:
            return DECLINE_MARKER
        scored.sort(key=lambda item: (-item[0], item[1]))
        best = scored[0][0]
        picked = [item for item in scored[: self.max_passages] if item[0] >= 0.8 * best]
        lines, used = [], 0
        for _, _, n, passage in sorted(picked, key=lambda item: item[1]):
            if lines and used + len(passage) > self.max_chars:
                continue
            used += len(passage)
            lines.append(f"{passage} [{n}]" if not passage.startswith(("```", "~~~")) else f"{passage}\n[{n}]")
        return "\n".join(lines)


def make_generator(settings: Settings) -> Generator:
    return OpenAIChat(settings) if settings.use_llm else ExtractiveAnswerer()
