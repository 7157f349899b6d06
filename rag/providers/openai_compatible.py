"""The chat provider `openai`: any OpenAI-compatible chat completions endpoint (OpenAI, Azure,
Ollama, vLLM, llama.cpp's server), and the only chat code that knows the openai client and its
exceptions.

What real servers do that the protocol's happy path does not say:
- usage: OpenAI sends it with a streamed reply only when asked (`stream_options`), in a last chunk
  without choices; llama.cpp's server never sends it when streaming (rag/generation.py counts).
- a prompt over the context window: a 400 `context_length_exceeded` naming the window when not
  streamed; llama.cpp's server answers a streamed one with 200 and a stream without a single
  event, so such a stream is asked again unstreamed to learn what went wrong.
- a parameter the endpoint does not take (`seed` or `stream_options` on some servers, `max_tokens`
  or `temperature` on OpenAI's reasoning models): a 400 naming it; the request is sent again
  without it (`max_tokens` as `max_completion_tokens`), and this provider leaves it out from then on.

openai is imported where an endpoint is called or a failure classified: a command without an
LLM endpoint never loads it (0.3-0.6 s).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from rag.config import LLMConfig
from rag.providers.openai_clients import AsyncChatClient
from rag.providers.openai_probe import probe
from rag.providers.openai_reply import body_reply, message_reply, stream_pieces
from rag.providers.openai_tokens import EndpointTokens
from rag.providers.protocol import (
    Description, Failure, MalformedReply, Messages, Reply, TextSink, retry_after_seconds,
)

if TYPE_CHECKING:
    import openai

SEED = 0  # the same prompt gets the same reply where the endpoint honours a seed
# What a request can do without, and what stands in for it when the endpoint refuses it.
OPTIONAL = {"seed": None, "stream_options": None, "temperature": None, "max_tokens": "max_completion_tokens"}
_UNSUPPORTED = re.compile(r"unsupported (?:parameter|value)|not supported|unrecognized|unknown (?:field|parameter)"
                          r"|extra (?:inputs|fields) (?:are )?not permitted", re.I)
_WINDOW = re.compile(r"(?:maximum context length is|context window of|context length of)\s+(\d+)", re.I)


class OpenAICompatible:
    """Chat completions through the openai client, its own retries off (rag/generation.py retries)."""

    def __init__(self, config: LLMConfig) -> None:
        self._chat = AsyncChatClient(config)
        self._config = config
        self._tokens = EndpointTokens(self._chat, config)
        self._left_out: set[str] = set()  # parameters the endpoint refused
        self.model = config.chat_model

    async def aclose(self) -> None:
        await self._chat.aclose()

    async def count_tokens(self, text: str, timeout: float) -> int | None:
        return await self._tokens.count(text, timeout)

    async def context_tokens(self, timeout: float) -> int | None:
        return await self._tokens.window(timeout)

    def _request(self, messages: Messages, max_tokens: int, timeout: float, stream: bool) -> dict[str, Any]:
        request: dict[str, Any] = dict(model=self.model, messages=messages, temperature=0, seed=SEED,
                                       max_tokens=max_tokens, timeout=timeout)
        if stream:
            request |= dict(stream=True, stream_options={"include_usage": True})
        for name in self._left_out & set(request):
            value = request.pop(name)
            if instead := OPTIONAL[name]:
                request[instead] = value
        return request

    async def _create(self, messages: Messages, max_tokens: int, timeout: float, stream: bool) -> Any:
        """The client's answer; a parameter the endpoint refuses is left out and the request sent
        again (once per parameter)."""
        import openai

        while True:
            try:
                return await self._chat.client.chat.completions.create(
                    **self._request(messages, max_tokens, timeout, stream))
            except openai.BadRequestError as exc:
                refused = _refused_parameter(exc, self._request(messages, max_tokens, timeout, stream))
                if refused is None:
                    raise
                self._left_out.add(refused)

    async def generate(self, messages: Messages, max_tokens: int, timeout: float) -> Reply:
        try:
            response = await self._create(messages, max_tokens, timeout, stream=False)
        except ValueError as exc:  # a JSON body that is not JSON (or not UTF-8)
            raise MalformedReply(f"not JSON ({type(exc).__name__})") from None
        return message_reply(response)

    async def stream(self, messages: Messages, max_tokens: int, timeout: float, emit: TextSink) -> Reply:
        """An endpoint that ignores `stream` answers with one JSON body: its reply is returned (its
        text not emitted), and the next request is streamed again. A stream that ends before a
        finish_reason broke off: the text so far is not an answer; one without a single event
        (llama.cpp's server, when the request failed after it said 200) is asked again unstreamed."""
        parts: list[str] = []
        finish, usage, events = "", None, 0
        async with await self._create(messages, max_tokens, timeout, stream=True) as stream:
            kind = stream.response.headers.get("content-type", "")
            if "json" in kind:
                return body_reply(await stream.response.aread())
            async for piece in stream_pieces(stream):
                events += 1
                usage = piece.usage or usage
                if piece.text:
                    parts.append(piece.text)
                    await emit(piece.text)
                finish = piece.finish_reason or finish
        if finish:
            return Reply("".join(parts), finish, usage)
        if events == 0 and kind.startswith("text/event-stream"):
            return await self._after_empty_stream(messages, max_tokens, timeout)
        raise MalformedReply("the stream ended before the answer did")

    async def _after_empty_stream(self, messages: Messages, max_tokens: int, timeout: float) -> Reply:
        """The request unstreamed, on a new connection if the pooled one is gone: llama.cpp's
        server closes its connection after such a stream, and at times after the refusal."""
        import openai

        try:
            return await self.generate(messages, max_tokens, timeout)
        except openai.APIConnectionError:
            return await self.generate(messages, max_tokens, timeout)

    def classify(self, exc: BaseException) -> Failure | None:
        return classify(exc)

    def describe(self) -> Description:
        return Description("openai", self._config.base_url or "api.openai.com", self.model,
                           lambda timeout_s: probe(self._config, timeout_s))


def classify(exc: BaseException) -> Failure | None:
    """What the openai client's exception means (chat and embeddings alike): no connection, a
    timeout, 429 and 5xx are worth another attempt; a prompt over the context window may fit
    shorter; another error status is a refusal; any other client error a failure."""
    import openai

    if not isinstance(exc, openai.OpenAIError):
        return None
    if isinstance(exc, openai.APITimeoutError):  # (a kind of APIConnectionError)
        return Failure("transient", "timed out", timed_out=True)
    if isinstance(exc, openai.APIConnectionError):
        return Failure("transient", "connection failed")
    status = getattr(exc, "status_code", None)
    retry_after = retry_after_seconds(getattr(getattr(exc, "response", None), "headers", None))
    detail = f"HTTP {status}" if status else type(exc).__name__
    if isinstance(exc, (openai.RateLimitError, openai.InternalServerError)):
        return Failure("transient", detail, status, retry_after)
    if isinstance(exc, openai.BadRequestError) and (window := _too_long(exc)) is not None:
        return Failure("too_long", f"{detail}: over the context window", status, context_tokens=window or None)
    return Failure("refused" if isinstance(exc, openai.APIStatusError) else "failed", detail, status, retry_after)


def _refused_parameter(exc: openai.BadRequestError, request: dict[str, Any]) -> str | None:
    """The optional parameter of `request` a 400 refuses, by its `param` or its message."""
    message = str(getattr(exc, "message", "") or exc)
    if getattr(exc, "code", None) not in ("unsupported_parameter", "unsupported_value") \
            and not _UNSUPPORTED.search(message):
        return None
    named = getattr(exc, "param", None)
    candidates = [named] if named in OPTIONAL else [name for name in OPTIONAL if re.search(rf"\b{name}\b", message)]
    return next((name for name in candidates if name in request), None)


def _too_long(exc: openai.BadRequestError) -> int | None:
    """The context window a 400 says the prompt exceeds (0: exceeded, the window not named); None:
    not that refusal."""
    message = str(getattr(exc, "message", "") or exc)
    found = _WINDOW.search(message)
    if getattr(exc, "code", None) == "context_length_exceeded" or found:
        return int(found.group(1)) if found else 0
    return None

