"""The one place an OpenAI client is built (chat, follow-up rewrites, embeddings, the doctor's probe).

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


def openai_client(endpoint: LLMConfig, timeout: float, max_retries: int = 0) -> "openai.OpenAI":
    import openai

    return openai.OpenAI(api_key=_key(endpoint), base_url=endpoint.base_url, timeout=timeout, max_retries=max_retries)
