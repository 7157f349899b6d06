"""The one place an OpenAI client is built (the OpenAI-compatible chat provider and its probe, embeddings).

Retries are off unless asked for: the chat callers bound their own retries and deadlines.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from rag.config import LLMConfig

if TYPE_CHECKING:
    import openai


def _key(endpoint: LLMConfig) -> str:
    # The client insists on a key; a local endpoint (Ollama, vLLM) takes any.
    return endpoint.api_key or "unused"


def async_openai_client(endpoint: LLMConfig) -> "openai.AsyncOpenAI":
    import openai

    return openai.AsyncOpenAI(api_key=_key(endpoint), base_url=endpoint.base_url, max_retries=0)


class AsyncChatClient:
    """An AsyncOpenAI client its owner closes (`aclose`) when it stops, reopened on next use.

    A client left to the garbage collector schedules its own close on whatever event loop is
    running then; when its connections belong to a loop that has ended, that close fails with
    "Event loop is closed" in someone else's loop. Closing it while its loop runs avoids that,
    and reopening on demand makes a close at any time safe for a caller that asks again."""

    def __init__(self, endpoint: LLMConfig) -> None:
        self._endpoint = endpoint
        self._client: openai.AsyncOpenAI | None = None

    @property
    def client(self) -> "openai.AsyncOpenAI":
        if self._client is None or self._client.is_closed():
            self._client = async_openai_client(self._endpoint)
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()


def openai_client(endpoint: LLMConfig, timeout: float, max_retries: int = 0) -> "openai.OpenAI":
    import openai

    return openai.OpenAI(api_key=_key(endpoint), base_url=endpoint.base_url, timeout=timeout, max_retries=max_retries)
