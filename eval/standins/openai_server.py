"""A local HTTP server speaking the OpenAI wire protocol (chat completions, embeddings, models).

It runs in a background thread so both sync and async code under test can call it. Tests set
its behaviour: the reply text, a delay, and faults for the next calls: a failure (status +
headers), a raw reply (garbage, an HTML page, JSON of the wrong shape) or a broken stream.
A chat request with `"stream": true` is answered with server-sent events, the reply in pieces of
`stream_piece_chars` characters `stream_gap_s` apart, as OpenAI streams (unless `streams` is
False: an endpoint that ignores the flag and answers with one JSON body), the usage in a last
chunk without choices when the request asks for it (`stream_options`), as OpenAI does, unless
`stream_usage` is False (llama.cpp's server never sends it). Tokens are counted as words (the
prompt's: of every message), and POST /extras/tokenize/count counts them so too (llama-cpp-python's
route). `context_tokens` refuses a longer prompt as OpenAI does; `finish_reason` is what a
completion says it ended with ("length": cut off).
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiohttp import web

from eval.standins.threaded import ThreadedServer


@dataclass
class Failure:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"error": {"message": "failure", "type": "server_error"}})


@dataclass
class RawReply:
    """A body given as is, with any status and content type."""
    body: bytes
    content_type: str = "application/json"
    status: int = 200


@dataclass
class BrokenStream:
    """A stream that sends the reply's first `after_chars` characters, then `tail` (e.g. an event
    that is not JSON) and ends without finishing: `cut` closes the connection mid-body."""
    after_chars: int = 0
    tail: bytes = b""
    cut: bool = True


Fault = Failure | RawReply | BrokenStream
EMPTY_CHOICES = RawReply(json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                                     "choices": []}).encode())
HTML_PAGE = RawReply(b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html")
GARBAGE = RawReply(b"\x00\xffnot json at all {", "application/json")


class OpenAIStandIn(ThreadedServer):
    def __init__(self, dim: int = 384) -> None:
        super().__init__()
        self.dim = dim
        self.reply: Callable[[list[dict[str, str]]], str] = lambda messages: "NOT_IN_DOCS"
        self.delay_s = 0.0
        self.streams = True
        self.stream_piece_chars = 24
        self.stream_gap_s = 0.0
        self.failures: list[Fault] = []  # the next calls' faults, in order
        self.models = ["gpt-4o-mini", "text-embedding-3-small"]  # what GET /v1/models lists
        self.stream_usage = True
        self.finish_reason = "stop"
        self.context_tokens = 0  # 0: no window
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self.counted: list[str] = []  # the texts POST /extras/tokenize/count counted

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/extras/tokenize/count", self._count)

    async def _record(self, request: web.Request) -> tuple[dict[str, Any], Fault | None]:
        body = await request.json()
        self.requests.append((request.path, body, dict(request.headers)))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        return body, self.failures.pop(0) if self.failures else None

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, fault = await self._record(request)
        text = self.reply(body["messages"])
        prompt = sum(tokens(m["content"]) for m in body["messages"])
        if fault is None and self.context_tokens and prompt > self.context_tokens:
            fault = Failure(400, body={"error": {
                "message": f"This model's maximum context length is {self.context_tokens} tokens. However, your "
                           f"messages resulted in {prompt} tokens.", "type": "invalid_request_error",
                "param": "messages", "code": "context_length_exceeded"}})
        usage = {"prompt_tokens": prompt, "completion_tokens": tokens(text), "total_tokens": prompt + tokens(text)}
        if isinstance(fault, BrokenStream):
            return await self._stream(request, body["model"], text[:fault.after_chars], fault)
        if fault is not None:
            return _faulty(fault)
        if body.get("stream") and self.streams:
            asked = (body.get("stream_options") or {}).get("include_usage") and self.stream_usage
            return await self._stream(request, body["model"], text, usage=usage if asked else None)
        return web.json_response({
            "id": "chatcmpl-standin",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "choices": [{"index": 0, "finish_reason": self.finish_reason,
                         "message": {"role": "assistant", "content": text}}],
            "usage": usage,
        })

    async def _count(self, request: web.Request) -> web.Response:
        text = (await request.json())["input"]
        self.counted.append(text)
        return web.json_response({"count": tokens(text)})

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [
            {"id": name, "object": "model", "created": 0, "owned_by": "standin"} for name in self.models]})

    async def _stream(self, request: web.Request, model: str, text: str,
                      broken: BrokenStream | None = None, usage: dict[str, int] | None = None) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        step = self.stream_piece_chars
        pieces = [{"role": "assistant", "content": ""}] + [
            {"content": text[i:i + step]} for i in range(0, len(text), step)]
        for n, delta in enumerate(pieces):
            chunk = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": int(time.time()),
                     "model": model, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            if self.stream_gap_s and n:
                await asyncio.sleep(self.stream_gap_s)
        if broken is not None:
            await response.write(broken.tail)
            if broken.cut:
                assert request.transport is not None
                request.transport.close()  # no last chunk: the body ends short
            else:
                await response.write_eof()
            return response
        done = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": int(time.time()),
                "model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": self.finish_reason}]}
        await response.write(f"data: {json.dumps(done)}\n\n".encode())
        if usage is not None:
            last = {"id": "chatcmpl-standin", "object": "chat.completion.chunk", "created": int(time.time()),
                    "model": model, "choices": [], "usage": usage}
            await response.write(f"data: {json.dumps(last)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _embeddings(self, request: web.Request) -> web.Response:
        body, fault = await self._record(request)
        if fault is not None:
            return _faulty(fault)
        inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
        data = [{"object": "embedding", "index": i, "embedding": self.vector(t).tolist()} for i, t in enumerate(inputs)]
        return web.json_response({"object": "list", "data": data, "model": body["model"],
                                  "usage": {"prompt_tokens": 1, "total_tokens": 1}})

    def vector(self, text: str) -> np.ndarray:
        """A deterministic bag-of-words vector: texts sharing words are similar."""
        v = np.zeros(self.dim, dtype=np.float32)
        for word in text.lower().split():
            v[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dim] += 1.0
        return v / max(float(np.linalg.norm(v)), 1e-9)


def tokens(text: str) -> int:
    """The stand-in's tokens: words."""
    return len(text.split())


def _faulty(fault: Fault) -> web.Response:
    if isinstance(fault, RawReply):
        return web.Response(body=fault.body, status=fault.status, headers={"Content-Type": fault.content_type})
    assert isinstance(fault, Failure), "a broken stream answers chat requests only"
    return web.json_response(fault.body, status=fault.status, headers=fault.headers)
