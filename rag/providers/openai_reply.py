"""An OpenAI-compatible endpoint's reply, read without trusting its shape (rag/providers/openai_compatible.py).

The client hands on whatever came back: a completion object, the text of an HTML page, JSON with
no `choices`, a chunk whose `delta` is null. These functions return the text, or raise
MalformedReply, so a reply that is not a completion is a provider failure and never a traceback.
"""
from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from rag.providers.protocol import MalformedReply

if TYPE_CHECKING:  # only an LLM endpoint's client uses it: an extractive answer never imports openai
    import openai


def _field(value: object, name: str) -> object:
    return value.get(name) if isinstance(value, dict) else getattr(value, name, None)


def _text(value: object) -> str:
    if value is not None and not isinstance(value, str):
        raise MalformedReply(f"content is {type(value).__name__}, not text")
    return value or ""


def message_text(reply: object) -> str:
    """The text of a whole completion (the client's object or the parsed JSON body)."""
    choices = _field(reply, "choices")
    if not isinstance(choices, list):
        raise MalformedReply(f"not a completion ({type(reply).__name__})")
    if not choices:
        raise MalformedReply("no choices")
    message = _field(choices[0], "message")
    if message is None:
        raise MalformedReply("a choice without a message")
    return _text(_field(message, "content"))


def body_text(body: bytes) -> str:
    """The text of a completion sent as one JSON body."""
    try:
        return message_text(json.loads(body))
    except ValueError as exc:  # not JSON, or not UTF-8
        raise MalformedReply(f"not JSON ({type(exc).__name__})") from None


async def stream_pieces(stream: openai.AsyncStream) -> AsyncIterator[tuple[str, bool]]:
    """(text, finished) for each chunk of a streamed completion; `finished` once a choice gives its
    finish_reason. Events that are not JSON or not chunks raise MalformedReply."""
    try:
        async for chunk in stream:
            choices = _field(chunk, "choices")
            if not choices:  # e.g. the usage chunk
                continue
            if not isinstance(choices, list):
                raise MalformedReply(f"chunk choices are {type(choices).__name__}")
            yield _text(_field(_field(choices[0], "delta"), "content")), _field(choices[0], "finish_reason") is not None
    except ValueError as exc:  # an event that is not JSON, or not UTF-8
        raise MalformedReply(f"an event that is not JSON ({type(exc).__name__})") from None
