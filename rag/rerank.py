"""A cross-encoder reranker behind the common `/rerank` HTTP protocol (served by Cohere, Jina,
Hugging Face TEI, vLLM...): POST `{model, query, documents, top_n}` → `{results: [{index,
relevance_score}]}`. It reorders the top fused candidates before the similarity floor and MMR.
Any failure (timeout, connection, HTTP error, malformed reply) keeps the fused order; the caller
counts it. No reranker model ships with docsbot: it is an outside service, configured by
`DOCSBOT_RERANK_URL` (+ model, key).
"""
from __future__ import annotations

import asyncio
from typing import Any

from rag.config import RerankConfig


class RerankError(RuntimeError):
    """The reranker gave no usable order; the message says why (never the key)."""


class Reranker:
    def __init__(self, config: RerankConfig) -> None:
        self.url = config.url
        self.model = config.model
        self.top_n = config.top_n
        self._key = config.api_key
        self._timeout = config.timeout_s

    async def order(self, query: str, documents: list[str]) -> list[int]:
        """Indexes of `documents`, most relevant first (the reranker's top_n, then the rest
        in their original order)."""
        import aiohttp  # here: a command with no reranker configured never loads it (0.2-0.5 s)

        headers = {"Content-Type": "application/json"}
        if self._key is not None:
            headers["Authorization"] = f"Bearer {self._key}"
        body = {"model": self.model, "query": query, "documents": documents, "top_n": len(documents)}
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self._timeout)) as session:
                async with session.post(self.url, json=body, headers=headers) as response:
                    if response.status != 200:
                        raise RerankError(f"HTTP {response.status}")
                    reply: Any = await response.json(content_type=None)
        except asyncio.TimeoutError:
            raise RerankError(f"timed out after {self._timeout:g}s") from None
        except (aiohttp.ClientError, ValueError) as exc:
            raise RerankError(type(exc).__name__) from None
        return _order(reply, len(documents))


def _order(reply: Any, n: int) -> list[int]:
    try:
        scored = sorted(((float(r["relevance_score"]), int(r["index"])) for r in reply["results"]), key=lambda x: -x[0])
    except (KeyError, TypeError, ValueError):
        raise RerankError("malformed reply") from None
    order = list(dict.fromkeys(i for _, i in scored if 0 <= i < n))
    if not order:
        raise RerankError("empty reply")
    return order + [i for i in range(n) if i not in set(order)]


def make_reranker(config: RerankConfig) -> Reranker | None:
    return Reranker(config) if config.url else None
