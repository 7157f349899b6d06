"""A local HTTP server speaking the common `/rerank` protocol (Cohere, Jina, TEI, vLLM):
POST {model, query, documents, top_n} → {results: [{index, relevance_score}]}.

Tests set how it scores (a function of the query and one document), a delay, or a failure
status; every request is recorded with its headers.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from aiohttp import web


class RerankStandIn:
    def __init__(self) -> None:
        self.score: Callable[[str, str], float] = lambda query, document: 0.0
        self.delay_s = 0.0
        self.status = 200
        self.requests: list[tuple[dict[str, Any], dict[str, str]]] = []
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/rerank"

    def start(self) -> "RerankStandIn":
        self._thread.start()
        self._ready.wait(10)
        return self

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(5)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/v1/rerank", self._rerank)
        self._runner = runner = web.AppRunner(app, shutdown_timeout=0.1)
        self._loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()

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
