"""An OpenAI-compatible endpoint's reply, read without trusting its shape (rag/providers/openai_compatible.py).

The client hands on whatever came back: a completion object, the text of an HTML page, JSON with
no `choices`, a chunk whose `delta` is null. These functions return the reply, or raise
MalformedReply, so a reply that is not a completion is a provider failure and never a traceback.
Usage that is missing or not numbers is no usage (rag/generation.py counts the tokens then).
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rag.providers.protocol import MalformedReply, Reply, Usage

if TYPE_CHECKING:  # only an LLM endpoint's client uses it: an extractive answer never imports openai
    import openai


def _field(value: object, name: str) -> object:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _text(value: object) -> str:
    if value is not None and not isinstance(value, str):
        raise MalformedReply(f"content is {type(value).__name__}, not text")
    return value or ""


def _finish(choice: object) -> str:
    reason = _field(choice, "finish_reason")
    return reason if isinstance(reason, str) else ""


def usage_of(value: object) -> Usage | None:
    """The `usage` of a completion or a chunk, when it holds the token counts."""
    usage = _field(value, "usage")
    prompt, completion = _field(usage, "prompt_tokens"), _field(usage, "completion_tokens")
    if isinstance(prompt, int) and isinstance(completion, int) and prompt >= 0 and completion >= 0:
        return Usage(prompt, completion)
    return None


def message_reply(reply: object) -> Reply:
    """A whole completion (the client's object or the parsed JSON body)."""
    choices = _field(reply, "choices")
    if not isinstance(choices, list):
        raise MalformedReply(f"not a completion ({type(reply).__name__})")
    if not choices:
        raise MalformedReply("no choices")
    message = _field(choices[0], "message")
    if message is None:
        raise MalformedReply("a choice without a message")
    return Reply(_text(_field(message, "content")), _finish(choices[0]), usage_of(reply))


def body_reply(body: bytes) -> Reply:
    """A completion sent as one JSON body."""
    try:
        return message_reply(json.loads(body))
    except ValueError as exc:  # not JSON, or not UTF-8
        raise MalformedReply(f"not JSON ({type(exc).__name__})") from None


@dataclass(frozen=True)
class Piece:
    """One chunk of a streamed completion: its text, its finish_reason once a choice gives one,
    and the usage it carries (OpenAI: a last chunk without choices; others: the last with them)."""

    text: str
    finish_reason: str
    usage: Usage | None


async def stream_pieces(stream: openai.AsyncStream) -> AsyncIterator[Piece]:
    """Each chunk of a streamed completion, to its end. Events that are not JSON or not chunks
    raise MalformedReply."""
    try:
        async for chunk in stream:
            choices = _field(chunk, "choices")
            if choices and not isinstance(choices, list):
                raise MalformedReply(f"chunk choices are {type(choices).__name__}")
            first = choices[0] if isinstance(choices, list) and choices else None
            yield Piece(_text(_field(_field(first, "delta"), "content")), _finish(first), usage_of(chunk))
    except ValueError as exc:  # an event that is not JSON, or not UTF-8
        raise MalformedReply(f"an event that is not JSON ({type(exc).__name__})") from None
