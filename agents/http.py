"""`/mcp` on `docsbot serve`'s aiohttp app: the SDK's streamable HTTP transport (an ASGI app),
driven from an aiohttp handler, so the endpoint sits behind the server's connection limits and
body timeout (bot/http_guard.py), its readiness and its metrics like any other route.

Each request is authenticated before the SDK sees it: `Authorization: Bearer <token>` (a
personal token from `/docs token`, state/tokens.py) names a Slack user, whose level is looked up
again for this request (`LevelOf`: the access file and Slack, as for their questions in Slack). No
token, an unknown, revoked or expired one, or an owner who can no longer read (a deactivated
account): 401 with one line. An owner whose account cannot be confirmed (Slack unreachable): 503
with Retry-After. Over the per-token rate: 429 with Retry-After. Past too many failed
authentications from the client's address, or from all of them (agents/auth_failures.py): 429
with Retry-After before the token is looked up. Every refusal is a JSON-RPC error whose message
is that line, so an MCP client shows the agent why (the SDK's client turns an HTTP error without
one into a bare "Server returned an error response").

The transport is stateless (a fresh SDK transport per request, JSON responses, no session id):
any replica answers any request, and a load balancer needs no affinity. Host and Origin are
checked by the SDK against DOCSBOT_MCP_ALLOWED_HOSTS / _ORIGINS (DNS rebinding).
"""
from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from aiohttp import web
from aiohttp_asgi.resource import ASGIContext
from mcp.server.transport_security import TransportSecuritySettings

from agents.auth_failures import AuthFailures
from agents.server import CALLER_KEY, build_server, http_caller
from agents.tools import Caller, DocsTools
from foundation.observability import metrics
from rag import Level
from state.db import StateUnavailable
from state.ratelimit import RateLimit
from state.tokens import PREFIX, McpTokens

log = logging.getLogger(__name__)

MCP_PATH = "/mcp"
# A Slack user's level now; None: no active account. Raises OwnerUnconfirmed when that cannot be told.
LevelOf = Callable[[str], Awaitable[Level | None]]
NO_TOKEN = "send Authorization: Bearer <token>; get a token with `/docs token` in Slack"
BAD_TOKEN = "this token is unknown, revoked or expired: get a new one with `/docs token` in Slack"
NO_READER = "this token's owner can no longer read the docs (the Slack account is deactivated)"
STATE_DOWN = "tokens cannot be checked right now (the state database is unavailable): try again shortly"
OWNER_UNCONFIRMED = "this token's owner cannot be confirmed with Slack right now: try again shortly"
OWNER_RETRY_S = 10
TOO_MANY_FAILURES = "too many failed authentications from here: try again in {wait} s"
REFUSED = -32000  # the JSON-RPC error code of a refused request (the HTTP status says which refusal)


class OwnerUnconfirmed(RuntimeError):
    """Whether a token's owner still has an active account cannot be told now (Slack unreachable):
    the token is refused, not served at `public`, as a deactivated owner must read nothing."""


class McpEndpoint:
    def __init__(self, tools: DocsTools, tokens: McpTokens, level_of: LevelOf, limit: RateLimit,
                 security: TransportSecuritySettings, failures: AuthFailures,
                 stopping: Callable[[], bool] = lambda: False) -> None:
        self.tokens = tokens
        self.level_of = level_of
        self.limit = limit
        self.failures = failures
        self.stopping = stopping
        self.server = build_server(tools, http_caller)
        # Builds the SDK's session manager (the Starlette app around it is not used: aiohttp serves).
        self.server.streamable_http_app(streamable_http_path=MCP_PATH, stateless_http=True, json_response=True,
                                        transport_security=security)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The SDK's task group, for as long as the HTTP server runs."""
        logging.getLogger("mcp").setLevel(max(logging.WARNING, logging.getLogger().level))  # a line per request
        async with self.server.session_manager.run():
            yield

    def routes(self) -> list[web.RouteDef]:
        return [web.route("*", MCP_PATH, self.handle)]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self.stopping():
            metrics.MCP_REFUSED.labels("stopping").inc()
            return _refused(503, "shutting down: this instance takes no new requests")
        caller = await self.caller(request)
        if isinstance(caller, web.Response):
            return caller
        body = await request.read()  # already read within the guard's body timeout
        return await _Exchange(self.server.session_manager.handle_request, request, body, caller).get_response()

    async def caller(self, request: web.Request) -> Caller | web.Response:
        """Who this request is from, established now; else the response that refuses it."""
        scheme, _, token = request.headers.get("Authorization", "").partition(" ")
        token = token.strip() if scheme.lower() == "bearer" else ""
        address = request.remote or ""
        if (wait_s := self.failures.wait_s(address, token)) > 0:
            metrics.MCP_REFUSED.labels("auth_failures").inc()
            return _refused(429, TOO_MANY_FAILURES.format(wait=_seconds(wait_s)), {"Retry-After": _seconds(wait_s)})
        if not token:
            return self._failed(address, token, NO_TOKEN)
        if token.startswith(PREFIX):  # anything else is refused without a query (state/tokens.py)
            metrics.MCP_TOKEN_LOOKUPS.inc()
        try:
            holder = await self.tokens.holder(token)
        except StateUnavailable as exc:
            log.warning("MCP request refused: %s", exc)
            return _refused(503, STATE_DOWN)
        if holder is None:
            return self._failed(address, token, BAD_TOKEN)
        try:
            level = await self.level_of(holder.user_id)
        except OwnerUnconfirmed as exc:
            log.warning("MCP request refused: %s", exc)
            metrics.MCP_REFUSED.labels("owner_unconfirmed").inc()
            return _refused(503, OWNER_UNCONFIRMED, {"Retry-After": str(OWNER_RETRY_S)})
        if level is None:
            return self._failed(address, token, NO_READER)
        self.failures.accepted(token)
        try:
            wait_s = await self.limit.take(f"mcp:{holder.token_id}")
        except StateUnavailable as exc:  # as for questions in Slack: a rate limit fails open
            log.warning("MCP rate limit not applied: %s", exc)
            wait_s = 0.0
        if wait_s > 0:
            metrics.MCP_REFUSED.labels("rate_limit").inc()
            return _refused(429, f"too many calls with this token: try again in {_seconds(wait_s)} s",
                            {"Retry-After": _seconds(wait_s)})
        return Caller(holder.user_id, level)

    def _failed(self, address: str, token: str, line: str) -> web.Response:
        self.failures.failed(address, token)
        metrics.MCP_REFUSED.labels("token").inc()
        return _refused(401, line)


def _refused(status: int, line: str, headers: dict[str, str] | None = None) -> web.Response:
    """The refusal as one line of JSON: a JSON-RPC error (no id: the request was not read) whose
    message is `line`."""
    extra = {"WWW-Authenticate": 'Bearer realm="docsbot"'} if status == 401 else {}
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": REFUSED, "message": line}})
    return web.Response(status=status, text=body + "\n", content_type="application/json",
                        headers={**extra, **(headers or {})})


def _seconds(wait_s: float) -> str:
    """A Retry-After header's whole seconds, at least 1."""
    return str(max(1, round(wait_s)))


class _Exchange(ASGIContext):
    """aiohttp-asgi's bridge for one request, fed the body the guard already read (the request's
    stream is spent), with the caller in the ASGI scope's state for the tools (agents/server.py)."""

    def __init__(self, app: Callable[..., Any], request: web.Request, body: bytes, caller: Caller) -> None:
        super().__init__(app, request, root_path="")
        self._body: bytes | None = body
        self._caller = caller
        self._done = asyncio.Event()

    async def on_receive(self) -> dict[str, Any]:
        if self._body is not None:
            body, self._body = self._body, None
            return {"type": "http.request", "body": body, "more_body": False}
        await self._done.wait()  # nothing more comes: "disconnected" once the exchange is over
        return {"type": "http.disconnect"}

    async def get_response(self) -> web.StreamResponse:
        try:
            await self.app({**self.scope, "state": {CALLER_KEY: self._caller}}, self.on_receive, self.on_send)
        finally:
            self._done.set()
        if self.response is None:
            raise RuntimeError("the MCP transport sent no response")
        return self.response
