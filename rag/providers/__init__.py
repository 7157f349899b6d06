"""Chat providers by name (DOCSBOT_LLM_PROVIDER): each builds a ChatProvider from the LLMConfig.

A provider's module is imported when a provider is made, not before: a command without an LLM
endpoint never loads a client library (openai alone costs 0.3-0.6 s). A new provider is its
module (rag/providers/protocol.py says what it implements) and one entry here.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the settings validate DOCSBOT_LLM_PROVIDER with provider_names(): nothing more is loaded
    from rag.config import LLMConfig
    from rag.providers.protocol import ChatProvider

ProviderFactory = Callable[["LLMConfig"], "ChatProvider"]


def _openai(config: LLMConfig) -> ChatProvider:
    from rag.providers.openai_compatible import OpenAICompatible

    return OpenAICompatible(config)


_PROVIDERS: dict[str, ProviderFactory] = {"openai": _openai}


def register(name: str, factory: ProviderFactory) -> None:
    """Make `factory` the provider called `name` (an application's or a test's own)."""
    _PROVIDERS[name] = factory


def provider_names() -> list[str]:
    return sorted(_PROVIDERS)


def make_provider(config: LLMConfig) -> ChatProvider:
    factory = _PROVIDERS.get(config.provider)
    if factory is None:
        raise ValueError(f"unknown LLM provider {config.provider!r}: one of {', '.join(provider_names())}")
    return factory(config)
