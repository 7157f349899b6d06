"""The chat provider `openai`: any OpenAI-compatible chat completions endpoint (OpenAI, Azure,
Ollama, vLLM), and the only chat code that knows the openai client and its exceptions.

openai is imported where an endpoint is called or a failure classified: a command without an
LLM endpoint never loads it (0.3-0.6 s).
"""
from __future__ import annotations

from rag.config import LLMConfig
from rag.providers.openai_clients import AsyncChatClient, openai_client
from rag.providers.openai_reply import body_text, message_text, stream_pieces
from rag.providers.protocol import (
    Description, Failure, MalformedReply, Messages, ProbeFinding, TextSink, retry_after_seconds,
)


class OpenAICompatible:
    """Chat completions through the openai client, its own retries off (rag/generation.py retries)."""

    def __init__(self, config: LLMConfig) -> None:
        self._chat = AsyncChatClient(config)
        self._config = config
        self.model = config.chat_model

    async def aclose(self) -> None:
        await self._chat.aclose()

    def _request(self, messages: Messages, max_tokens: int, timeout: float) -> dict:
        return dict(model=self.model, messages=messages, temperature=0, max_tokens=max_tokens, timeout=timeout)

    async def generate(self, messages: Messages, max_tokens: int, timeout: float) -> str:
        try:
            response = await self._chat.client.chat.completions.create(**self._request(messages, max_tokens, timeout))
        except ValueError as exc:  # a JSON body that is not JSON (or not UTF-8)
            raise MalformedReply(f"not JSON ({type(exc).__name__})") from None
        return message_text(response)

    async def stream(self, messages: Messages, max_tokens: int, timeout: float, emit: TextSink) -> str:
        """An endpoint that ignores `stream` answers with one JSON body: its text is returned (not
        emitted), and the next request is streamed again. A stream that ends before a
        finish_reason broke off: the text so far is not an answer."""
        parts: list[str] = []
        request = self._request(messages, max_tokens, timeout)
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

    def classify(self, exc: BaseException) -> Failure | None:
        """No connection, a timeout, 429 and 5xx are worth another attempt; another error status
        is a refusal; any other client error a failure."""
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
        return Failure("refused" if isinstance(exc, openai.APIStatusError) else "failed", detail, status, retry_after)

    def describe(self) -> Description:
        return Description("openai", self._config.base_url or "api.openai.com", self.model, self._probe)

    def _probe(self, timeout_s: float) -> list[ProbeFinding]:
        """The endpoint lists its models (the configured one among them) and makes a one-token completion."""
        import openai

        client = openai_client(self._config, timeout_s)
        where, model = self._config.base_url or "api.openai.com", self.model
        try:
            models = [m.id for m in client.models.list()]
        except openai.APIConnectionError as exc:
            return [ProbeFinding("llm endpoint", "failed", f"cannot reach {where}: {type(exc).__name__}",
                                 "check OPENAI_BASE_URL and that the endpoint is up and reachable from here")]
        except openai.AuthenticationError:
            return [ProbeFinding("llm endpoint", "failed", f"{where} refused the key (401)",
                                 "set a valid OPENAI_API_KEY")]
        except openai.APIStatusError as exc:
            models = []
            listed = ProbeFinding("llm model", "warning", f"{where} does not list models (HTTP {exc.status_code})",
                                  "make sure DOCSBOT_CHAT_MODEL names a model the endpoint serves")
        else:
            listed = (ProbeFinding("llm model", "ok", f"{model} is listed") if model in models
                      else ProbeFinding("llm model", "failed", f"{model} is not among the {len(models)} models listed",
                                        f"set DOCSBOT_CHAT_MODEL to one of: {', '.join(models[:8]) or '(none)'}"))
        found = [ProbeFinding("llm endpoint", "ok", f"{where} answers"), listed]
        try:
            client.chat.completions.create(model=model, max_tokens=1,
                                           messages=[{"role": "user", "content": "Reply with: ok"}])
            found.append(ProbeFinding("llm completion", "ok", "a one-token completion works"))
        except openai.OpenAIError as exc:
            status = getattr(exc, "status_code", None)
            brief = f"HTTP {status}" if status else type(exc).__name__
            found.append(ProbeFinding("llm completion", "failed", f"a one-token completion failed: {brief}",
                                      "check DOCSBOT_CHAT_MODEL, the key's quota and the provider's status"))
        return found
