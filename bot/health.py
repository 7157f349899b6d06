"""`/healthz` (liveness), `/readyz` (readiness) and `/metrics` on the bot's HTTP app.

Liveness only says the event loop answers. Readiness runs a small list of checks (the index is
readable with the configured model and dimension, the answer store answers) on top of what the
process knows: whether Slack auth was verified at start, and whether shutdown has begun. From the
moment shutdown begins `/readyz` is a 503 and new Slack requests are refused (see `refuse_while_stopping`).
More checks (e.g. the shared state store) are added by appending to `Readiness.checks`.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from docsbot.observability import metrics

if TYPE_CHECKING:
    from bot.app import DocsBot
    from bot.services import Services
    from rag.engine import Engine

Check = Callable[[], Awaitable[str | None]]  # a problem in plain words, or None when fine
CHECK_TIMEOUT_S = 5.0
STOPPING = "shutting down: this instance takes no new requests"


@dataclass
class Readiness:
    """What `/readyz` reports; `checks` maps a name to a probe (append more, e.g. a state store)."""

    checks: dict[str, Check] = field(default_factory=dict)
    slack_auth: str | None = "Slack auth not verified yet"  # set by `docsbot serve` after auth.test
    stopping: bool = False

    async def problems(self) -> dict[str, str]:
        found: dict[str, str] = {}
        if self.stopping:
            found["shutdown"] = STOPPING
        if self.slack_auth:
            found["slack"] = self.slack_auth
        results = await asyncio.gather(*(_run(check) for check in self.checks.values()))
        found.update({name: problem for name, problem in zip(self.checks, results) if problem})
        return found


async def _run(check: Check) -> str | None:
    try:
        async with asyncio.timeout(CHECK_TIMEOUT_S):
            return await check()
    except TimeoutError:
        return f"no answer within {CHECK_TIMEOUT_S:.0f} s"
    except Exception as exc:  # a readiness probe reports, it never raises
        return f"{type(exc).__name__}: {exc}"


def index_status(engine: Engine) -> str | None:
    """Blocking: the index opens, was built with the configured embedding model and dimension,
    and has rows (refreshing the index gauges on the way)."""
    store = engine.store
    store.check_embedding(engine.embedder.name, engine.embedder.dim)
    if not store.exists():
        return "no index yet: run `docsbot index` or `docsbot sync`"
    chunks = store.chunks().count_rows()
    metrics.observe_index(store.meta(), chunks)
    return None if chunks else "the index is empty"


async def state_status(services: Services) -> str | None:
    """StateUnavailable (the database cannot be reached) is the problem reported."""
    await services.answer_log.get("readiness-probe")
    return None


def standard_checks(services: Services) -> dict[str, Check]:
    return {
        "index": lambda: asyncio.to_thread(index_status, services.engine),
        # The state database (answers, feedback, dedupe, limits) answers a read.
        "state": lambda: state_status(services),
    }


def health_routes(bot: DocsBot) -> list[web.RouteDef]:
    work, readiness = bot.services.work, bot.readiness
    metrics.QUEUE_DEPTH.set_function(lambda: work.pending)
    metrics.QUEUE_WAITING.set_function(lambda: bot.services.answerer.queue.depth)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "answers_in_progress": work.pending})

    async def readyz(request: web.Request) -> web.Response:
        problems = await readiness.problems()
        return web.json_response({"ready": not problems, "problems": problems}, status=503 if problems else 200)

    async def metrics_page(request: web.Request) -> web.Response:
        await _run(lambda: asyncio.to_thread(index_status, bot.services.engine))  # fresh index gauges
        body, content_type = metrics.exposition()
        return web.Response(body=body, headers={"Content-Type": content_type})

    return [web.get("/healthz", healthz), web.get("/readyz", readyz), web.get("/metrics", metrics_page)]


def refuse_while_stopping(readiness: Readiness, path: str) -> Any:
    """aiohttp middleware: once shutdown began, Slack requests get a 503, so Slack delivers them
    again (to another replica) instead of this one dropping them half-way."""

    @web.middleware
    async def middleware(request: web.Request, handler: Any) -> web.StreamResponse:
        if readiness.stopping and request.path == path:
            return web.json_response({"error": STOPPING}, status=503)
        return await handler(request)

    return middleware
