"""A local HTTP server speaking the common `/rerank` protocol (Cohere, Jina, TEI, vLLM):
POST {model, query, documents, top_n} → {results: [{index, relevance_score}]}.

Tests set how it scores (a function of the query and one document), a delay, or a failure
status; every request is recorded with its headers.
"""
from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from aiohttp import web

from eval.standins.threaded import ThreadedServer


class RerankStandIn(ThreadedServer):
    def __init__(self) -> None:
        super().__init__()
        self.score: Callable[[str, str], float] = lambda query, document: 0.0
        self.delay_s = 0.0
        self.status = 200
        self.requests: list[tuple[dict[str, Any], dict[str, str]]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/rerank"

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/rerank", self._rerank)

    async def _rerank(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((body, dict(request.headers)))
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if self.status != 200:
            return web.json_response({"error": "failure"}, status=self.status)
        scored = sorted(((self.score(body["query"], d), i) for i, d in enumerate(body["documents"])), reverse=True)
        results = [{"index": i, "relevance_score": s} for s, i in scored[: body.get("top_n") or len(scored)]]
        return web.json_response({"model": body["model"], "results": results})
