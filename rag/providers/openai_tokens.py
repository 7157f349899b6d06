"""Tokens as an OpenAI-compatible endpoint's own model counts them, and its context window, where
the server says (OpenAI's API says neither: rag/fitting.py estimates then).

- counting: llama-cpp-python's `POST /extras/tokenize/count` ({"input"} → {"count"}); llama.cpp's
  and vLLM's `POST /tokenize` ({"content"} or {"prompt"} → {"tokens"} or {"count"});
- the window: vLLM's model entry (`max_model_len`), LM Studio's (`context_length`), llama.cpp's
  `GET /props` (`default_generation_settings.n_ctx`). llama-cpp-python's server tells it nowhere:
  DOCSBOT_LLM_CONTEXT_TOKENS, or the window its refusal of a longer prompt names.

Each is looked for once per process; a server that has none is not asked again.
"""
from __future__ import annotations

from typing import Any

from rag.config import LLMConfig
from rag.providers.openai_clients import AsyncChatClient

_COUNTERS = ("/extras/tokenize/count", "/tokenize")
_WINDOW_KEYS = ("max_model_len", "context_length", "context_window")
_UNKNOWN = -1  # looked for, not found


class EndpointTokens:
    def __init__(self, chat: AsyncChatClient, config: LLMConfig) -> None:
        self._chat = chat
        self._config = config
        # The server's root: the tokenizer routes are beside /v1, not under it.
        self._root = (config.base_url or "").rstrip("/").removesuffix("/v1")
        self._counter: str | None = None if self._root else ""  # "": none (api.openai.com has none)
        self._window: int | None = None

    async def count(self, text: str, timeout: float) -> int | None:
        """`text`'s tokens by the endpoint's tokenizer; None: it has no tokenizer route, or it failed."""
        import openai

        paths = _COUNTERS if self._counter is None else (self._counter,) if self._counter else ()
        for path in paths:
            try:
                found = await self._chat.client.post(
                    self._root + path, cast_to=object, options={"timeout": timeout},
                    body={"input": text, "content": text, "prompt": text, "model": self._config.chat_model})
            except openai.APIStatusError:
                continue  # not this server's route
            except (openai.OpenAIError, ValueError):
                return None  # not now: asked again next time
            count = _count(found)
            if count is not None:
                self._counter = path
                return count
        self._counter = ""
        return None

    async def window(self, timeout: float) -> int | None:
        """The context window in tokens the server says its model has; None: it does not say."""
        if self._window is None:
            try:
                self._window = await self._listed(timeout) or await self._props(timeout) or _UNKNOWN
            except Exception as exc:  # no answer now (a timeout, no connection): asked again next time
                import openai

                if not isinstance(exc, (openai.OpenAIError, ValueError)):
                    raise
                return None
        return self._window if self._window != _UNKNOWN else None

    async def _listed(self, timeout: float) -> int | None:
        import openai

        try:
            models = await self._chat.client.models.list(timeout=timeout)
        except openai.APIStatusError:
            return None
        for entry in models.data:
            if entry.id == self._config.chat_model:
                fields = entry.model_dump()
                return next((v for key in _WINDOW_KEYS if isinstance(v := fields.get(key), int) and v > 0), None)
        return None

    async def _props(self, timeout: float) -> int | None:
        import openai

        if not self._root:
            return None
        try:
            props = await self._chat.client.get(self._root + "/props", cast_to=object, options={"timeout": timeout})
        except openai.APIStatusError:
            return None
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        return n_ctx if isinstance(n_ctx, int) and n_ctx > 0 else None


def _count(found: Any) -> int | None:
    if not isinstance(found, dict):
        return None
    if isinstance(count := found.get("count"), int):
        return count
    tokens = found.get("tokens")
    return len(tokens) if isinstance(tokens, list) else None
