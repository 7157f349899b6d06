"""`/healthz` (liveness), `/readyz` (readiness) and `/metrics` on the bot's HTTP app.

Liveness only says the event loop answers. Readiness says whether this replica can answer
questions: the index is readable with the configured model and dimension, Slack auth was verified
at start, and shutdown has not begun; any of those failing is a 503. From the moment shutdown
begins `/readyz` is a 503 and new Slack requests are refused (see `refuse_while_stopping`). What
the replica answers without is a `Degrading` check, reported under "degraded" with a 200: the
state database (dedupe and the rate limit fail open, an answer is posted even when it cannot be
logged), so a state outage does not take every replica out of a load balancer.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

from bot import surfaces
from foundation.observability import metrics
from state.db import StateUnavailable

if TYPE_CHECKING:
    from bot.services import Services
    from rag import Engine

Check = Callable[[], Awaitable[str | None]]  # a problem in plain words, or None when fine
CHECK_TIMEOUT_S = 5.0
# A load balancer's probe gives `/readyz` about a second (Kubernetes' default timeout is 1 s).
DEGRADED_WAIT_S = 0.5
STOPPING = "shutting down: this instance takes no new requests"
# No URL or host: `/readyz` is served on the bot's public port.
STATE_UNAVAILABLE = "the state database is unavailable: answering without dedupe, rate limits and the answer log"


@dataclass
class Degrading:
    """A check of something the replica answers without: its problem is reported, not a 503.
    `/readyz` waits for it DEGRADED_WAIT_S at most; a slower run carries on, and the next
    request waits for that run rather than starting another."""

    check: Check
    _running: asyncio.Task[str | None] | None = field(default=None, init=False, repr=False)

    async def __call__(self) -> str | None:
        if self._running is None or self._running.done():
            self._running = asyncio.create_task(_run(self.check))
        done, _ = await asyncio.wait({self._running}, timeout=DEGRADED_WAIT_S)
        return self._running.result() if done else f"no answer within {DEGRADED_WAIT_S:g} s"


@dataclass
class Readiness:
    """What `/readyz` reports; `checks` maps a name to a probe: a problem makes the replica
    unready, except a `Degrading` probe's, which is reported as degraded."""

    checks: dict[str, Check] = field(default_factory=dict)
    slack_auth: str | None = "Slack auth not verified yet"  # set by `docsbot serve` after auth.test
    stopping: bool = False

    async def report(self) -> tuple[dict[str, str], dict[str, str]]:
        """(problems, degraded): what keeps this replica from answering, and what it answers without."""
        problems: dict[str, str] = {}
        if self.stopping:
            problems["shutdown"] = STOPPING
        if self.slack_auth:
            problems["slack"] = self.slack_auth
        degraded: dict[str, str] = {}
        results = await asyncio.gather(*(_run(check) for check in self.checks.values()))
        for (name, check), problem in zip(self.checks.items(), results):
            if problem:
                (degraded if isinstance(check, Degrading) else problems)[name] = problem
        return problems, degraded


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
    chunks = store.chunk_count()
    metrics.observe_index(store.meta(), chunks)
    return None if chunks else "the index is empty"


async def state_status(services: Services) -> str | None:
    """The state database (answers, feedback, dedupe, limits) answers a read."""
    try:
        await services.answer_log.get("readiness-probe")
    except StateUnavailable:
        return STATE_UNAVAILABLE
    return None


def standard_checks(services: Services) -> dict[str, Check]:
    checks: dict[str, Check] = {
        "index": lambda: asyncio.to_thread(index_status, services.engine),
        "state": Degrading(lambda: state_status(services)),
    }
    if services.state_file is not None:  # deleted while in use: restored, or not ready
        checks["state_file"] = services.state_file.check
    return checks


def health_routes(services: Services, readiness: Readiness) -> list[web.RouteDef]:
    work = services.work
    metrics.declare_surfaces(surfaces.NAMES)
    metrics.QUEUE_DEPTH.set_function(lambda: work.pending)
    metrics.QUEUE_WAITING.set_function(lambda: services.answerer.queue.depth)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "answers_in_progress": work.pending})

    async def readyz(request: web.Request) -> web.Response:
        problems, degraded = await readiness.report()
        body = {"ready": not problems, "problems": problems, "degraded": degraded}
        return web.json_response(body, status=503 if problems else 200)

    async def metrics_page(request: web.Request) -> web.Response:
        await _run(lambda: asyncio.to_thread(index_status, services.engine))  # fresh index gauges
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
