"""Answer generation: any OpenAI-compatible chat endpoint, or the embedded extractive answerer.

The extractive answerer needs no model and no key: it quotes the passages of the selected
sources that best answer the question (see ExtractiveAnswerer), each with its citation. It cannot
paraphrase, combine facts or reason.
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
from rag.completion import MalformedReply, body_text, message_text, stream_pieces
from rag.followup import heuristic_query
from rag.prompt import DECLINE_MARKER, Source, build_messages
from rag.kinds import fits_kind, question_kind
from rag.terms import content_terms, matched_terms


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
    exponential backoff that honour Retry-After. A reply that is not a completion (garbage, an
    HTML page, no choices, a stream that breaks off) is a ProviderError like an outage."""

    def __init__(self, settings: Settings) -> None:
        key = settings.openai_api_key.get_secret_value() if settings.openai_api_key else "unused"
        self._client = openai.AsyncOpenAI(api_key=key, base_url=settings.openai_base_url, max_retries=0)
        self.name = settings.chat_model
        self._settings = settings

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """With `on_text` (and DOCSBOT_LLM_STREAM) the completion is streamed; an attempt that
        already passed text on is not retried (the reader would see it twice)."""
        s = self._settings
        messages = build_messages(question, sources, history)
        sink = on_text if s.llm_stream else None
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
                reply = self._whole(request) if sink is None else self._streamed(request, emit)
                return await asyncio.wait_for(reply, timeout=timeout + 0.5)
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
            except MalformedReply as exc:
                metrics.llm_failed(exc)
                raise ProviderError(f"the AI service sent a malformed reply ({exc})") from None
            delay = retry_after if retry_after is not None else 0.5 * 2**attempt * (1 + random.random() / 2)
            if attempt == s.llm_max_retries or delay > deadline - time.monotonic():
                break
            metrics.LLM_RETRIES.labels(kind).inc()
            await asyncio.sleep(delay)
        raise ProviderError(f"the AI service is unavailable ({problem})", retry_after)

    async def _whole(self, request: dict) -> str:
        """One completion, not streamed."""
        try:
            response = await self._client.chat.completions.create(**request)
        except ValueError as exc:  # a JSON body that is not JSON (or not UTF-8)
            raise MalformedReply(f"not JSON ({type(exc).__name__})") from None
        return message_text(response)

    async def _streamed(self, request: dict, emit: TextSink) -> str:
        """One streamed completion: every text delta goes to `emit`; returns the whole text.

        An endpoint that ignores `stream` answers with one JSON body: its text is returned (not
        emitted), and the next request is streamed again. A stream that ends before a
        finish_reason broke off: the text so far is not an answer."""
        parts: list[str] = []
        async with await self._client.chat.completions.create(**request, stream=True) as stream:
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
    status = getattr(exc, "status_code", None)
    if isinstance(exc, asyncio.TimeoutError) or isinstance(exc, openai.APITimeoutError):
        return "timed out"
    if isinstance(exc, openai.APIConnectionError):
        return "connection failed"
    return f"HTTP {status}" if status else type(exc).__name__


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`*\"'(])")
_HEADING = re.compile(r"^#{1,6}\s+(.*)$")


def split_passages(text: str) -> list[str]:
    """What the extractive answerer may quote from a chunk (headings not included)."""
    return [passage for _, passage in headed_passages(text)]


def headed_passages(text: str) -> list[tuple[str, str]]:
    """(heading above it within the chunk, passage): sentences, a lead-in ending in ':' together
    with the list or code block that follows it, list items, table rows spelled out with their
    column names, and whole small code blocks."""
    passages: list[tuple[str, str]] = []
    heading = ""
    open_list = False  # the last passage is a lead-in that following list items (or code) join
    for block in re.split(r"\n\s*\n", text):
        block = block.strip()
        if not block:
            continue
        if block.startswith(("```", "~~~")):
            if open_list and len(passages[-1][1]) + len(block) <= 700:
                passages[-1] = (heading, passages[-1][1] + "\n" + block)
            elif len(block) <= 600:
                passages.append((heading, block))
            open_list = False
            continue
        lines = [line.strip() for line in block.split("\n") if line.strip()]
        if all(line.startswith("|") for line in lines):
            passages.extend((heading, row) for row in _table_rows(lines))
            open_list = False
            continue
        for unit in _line_units(lines):
            if match := _HEADING.match(unit):
                heading, open_list = match.group(1), False
                continue
            if _ITEM.match(unit):
                if open_list and len(passages[-1][1]) + len(unit) <= 700:
                    passages[-1] = (heading, passages[-1][1] + "\n" + unit)
                    continue
                passages.append((heading, unit))
                open_list = _ends_lead_in(unit)
                continue
            sentences = [p.strip() for p in _SENTENCE.split(unit) if p.strip()]
            passages.extend((heading, sentence) for sentence in sentences)
            open_list = bool(sentences) and _ends_lead_in(sentences[-1])
    return passages


def _ends_lead_in(text: str) -> bool:
    return text.rstrip("*_` ").endswith(":")


_ITEM = re.compile(r"^(?:[-*+]\s|\d+[.)]\s)")
_TABLE_RULE = re.compile(r"\|?[\s:|-]+\|?")


def _line_units(lines: list[str]) -> list[str]:
    """List items and headings stand alone; soft-wrapped paragraph lines are joined."""
    units: list[str] = []
    for line in lines:
        if units and not _ITEM.match(line) and not _HEADING.match(line) and not _HEADING.match(units[-1]):
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


_NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
_OVER = re.compile(rf"\b(?:over|above|more than|greater than|exceeding)\s*[€$£]?\s*{_NUMBER}|>\s*[€$£]?{_NUMBER}", re.I)
_UNDER = re.compile(rf"\b(?:up to|under|below|less than|at most|max(?:imum)?)\s*[€$£]?\s*{_NUMBER}|<\s*[€$£]?{_NUMBER}", re.I)
_RANGE = re.compile(rf"[€$£]?{_NUMBER}\s*(?:[-–]|to)\s*[€$£]?{_NUMBER}")


def _numbers(text: str) -> list[float]:
    return [float(n.replace(",", "")) for n in re.findall(rf"(?<![\w.]){_NUMBER}", text) if n.replace(",", "")]


def number_fit(question: str, passage: str) -> int:
    """+1 when a number in the question falls in a bound or range the passage states, -1 when
    the passage states bounds and none fits, 0 when it states none (e.g. "3000 euros" against
    "Over €2,500")."""
    asked = _numbers(question)
    bounds = [(float((a or b).replace(",", "")), math.inf) for a, b in _OVER.findall(passage)]
    bounds += [(-math.inf, float((a or b).replace(",", ""))) for a, b in _UNDER.findall(passage)]
    bounds += [(float(a.replace(",", "")), float(b.replace(",", ""))) for a, b in _RANGE.findall(passage)]
    if not asked or not bounds:
        return 0
    return 1 if any(lo <= n <= hi for n in asked for lo, hi in bounds) else -1


class ExtractiveAnswerer:
    """The embedded default generator: quotes the passages that best answer the question, each
    with its citation.

    A passage scores by the (rare) question words it shares, by stem and synonym, with itself and,
    at half weight, with the headings above it, plus a bonus when it holds the kind of answer the
    question asks for (a duration for "how long", a person or role for "who", a reason for "why",
    steps or commands for "how do I", a day or time for "when") and when a number in the question
    fits a bound it states; all scaled by how close its page is to the question (a page that the
    full-text list alone brought in should not be quoted for one word it shares). Whether the
    sources answer at all was decided before (the engine's calibrated answerability gate); it
    declines only when no passage shares a word."""

    name = "extractive"

    def __init__(self, max_passages: int = 3, max_chars: int = 700, kind_bonus: float = 1.0) -> None:
        self.max_passages = max_passages
        self.max_chars = max_chars
        self.kind_bonus = kind_bonus

    async def generate(
        self, question: str, sources: list[Source], history: list[tuple[str, str]], on_text: TextSink | None = None
    ) -> str:
        """Never streams: the quotes are known at once, so `on_text` is not called."""
        kind = question_kind(question)
        asked = set(content_terms(heuristic_query(question, history)))
        if kind == "reason":  # "why did we choose X": the choice is given, its reason is asked
            asked.discard("decide")
        passages = []
        for s in sources:
            outer, _, own = s.section.rpartition(" › ")
            title_terms = matched_terms(asked, set(content_terms(s.title)))  # the page is about them
            for heading, passage in headed_passages(s.text):
                own_heading = heading or own  # the passage's own heading counts in full
                if heading:
                    outer = f"{outer} {own}"
                passages.append((s, f"{outer} {own_heading}", passage, matched_terms(asked, set(content_terms(passage))) | title_terms,
                                 matched_terms(asked, set(content_terms(own_heading))),
                                 matched_terms(asked, set(content_terms(outer)))))
        df = Counter(t for p in passages for t in p[3] | p[4])
        top = max((s.page_similarity for s in sources), default=0.0)
        idf = {t: math.log(1 + len(passages) / df[t]) for t in df}
        scored: list[tuple[float, int, int, str]] = []
        for order, (s, headings, passage, overlap, own_terms, outer_terms) in enumerate(passages):
            if not overlap and not own_terms and not outer_terms:
                continue
            relevance = sum(idf[t] for t in overlap | own_terms) + 0.5 * sum(idf.get(t, 1.0) for t in outer_terms - overlap - own_terms)
            relevance += 0.5 / s.n
            if top > 0:  # a page far less similar to the question than the best one weighs less
                relevance *= (max(s.page_similarity, 0.0) / top) ** 0.5
            bonus = self.kind_bonus * fits_kind(kind, headings, passage) + 0.5 * number_fit(question, passage)
            scored.append((relevance * (1 + bonus), order, s.n, passage))
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
