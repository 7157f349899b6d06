"""A local stand-in for the Slack Web API (and response URLs), for the console and the tests.

An aiohttp server on 127.0.0.1 around the workspace that `SlackMethods` (bot/local/slack_methods.py)
keeps and answers for: it checks the bearer token, records every call, takes the arguments the ways
Slack accepts them and collects what is posted to response URLs. Queued failures (an error or an
HTTP 429 with Retry-After) and delays can be injected per method, and Slack's rate limits set per
method (`limits`): past one, an HTTP 429 `ratelimited` with Retry-After, on a clock that a
benchmark may run faster (`speed`).
"""
from __future__ import annotations

import asyncio
import json
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from bot.local.slack_methods import SlackMethods, Workspace, blocks_error

__all__ = ["Call", "Failure", "Limit", "SlackStandIn", "Workspace", "visible_text"]


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    at: float
    ok: bool = False  # what Slack answered
    status: int = 200  # the HTTP status (429: rate-limited)
    retry_after: float | None = None  # Slack's seconds, with a 429


@dataclass(frozen=True)
class Limit:
    """Slack's rate limit on a method: at most `calls` in any `per_s` seconds, per channel when
    `per_channel` (chat.postMessage: about 1 a second per channel), else per workspace (Tier 3:
    50 a minute). Calls past it are not counted: Slack answers 429 with Retry-After, whole seconds."""

    calls: int
    per_s: float
    per_channel: bool = False


@dataclass
class Failure:
    """The next call to a method fails: with `error` (HTTP 200, ok=false) or an HTTP status."""

    error: str = "internal_error"
    status: int = 200
    retry_after: int | None = None


class SlackStandIn(SlackMethods):
    def __init__(self, workspace: Workspace, token: str) -> None:
        super().__init__(workspace)
        self.token = token
        self.calls: list[Call] = []
        self.responses: list[dict[str, Any]] = []  # payloads posted to response URLs
        self.failures: dict[str, list[Failure]] = {}
        self.scopes: list[str] = []  # sent as Slack's x-oauth-scopes header when set
        self.config_token = ""  # what apps.manifest.* take (an app configuration token), not the bot token
        # A test looks at the world as each call lands, before the caller gets its response.
        self.on_call: Callable[[Call], Awaitable[None]] | None = None
        self.delays: dict[str, float] = {}  # seconds a method takes to answer (a slow Slack)
        self.limits: dict[str, Limit] = {}  # Slack's rate limits, by method
        # Slack seconds per real second: > 1 runs the limits' clock faster, and Retry-After is then
        # sent in real seconds, with decimals (Slack's whole seconds divided by the speed).
        self.speed = 1.0
        self._windows: dict[tuple[str, str], deque[float]] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> "SlackStandIn":
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/respond/{key}", self._respond)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, key: str) -> str:
        return f"http://127.0.0.1:{self.port}/respond/{key}"

    # -- what a test does (not through the API) --------------------------------------------------
    def fail_next(self, method: str, failure: Failure) -> None:
        self.failures.setdefault(method, []).append(failure)

    def calls_to(self, method: str, ok_only: bool = False) -> list[dict[str, Any]]:
        return [c.params for c in self.calls if c.method == method and (c.ok or not ok_only)]

    # -- HTTP ------------------------------------------------------------------------------------------
    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await _params(request)
        auth = request.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.pop("token", "")
        call = Call(method, params, time.monotonic())
        self.calls.append(call)
        if self.delays.get(method):
            await asyncio.sleep(self.delays[method])
        if token != (self.config_token if method.startswith("apps.manifest.") else self.token):
            return web.json_response({"ok": False, "error": "invalid_auth"})
        if self.failures.get(method):
            failure = self.failures[method].pop(0)
            call.status, call.retry_after = failure.status, failure.retry_after
            headers = {"Retry-After": str(failure.retry_after)} if failure.retry_after is not None else {}
            return web.json_response({"ok": False, "error": failure.error}, status=failure.status, headers=headers)
        if (retry_after := self._over_limit(method, params)) is not None:
            call.status, call.retry_after = 429, retry_after
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": f"{retry_after / self.speed:g}"})
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        if handler is None:
            return web.json_response({"ok": False, "error": "unknown_method"})
        try:
            result = handler(params)
        except KeyError as exc:
            result = {"ok": False, "error": "invalid_arguments", "detail": f"missing {exc}"}
        call.ok = result["ok"]
        if self.on_call is not None:
            await self.on_call(call)
        return web.json_response(result, headers={"x-oauth-scopes": ",".join(self.scopes)} if self.scopes else None)

    def _over_limit(self, method: str, params: dict[str, Any]) -> int | None:
        """Slack's whole seconds until `method` may be called again, or None: this call counts."""
        limit = self.limits.get(method)
        if limit is None:
            return None
        key = (method, str(params.get("channel", "")) if limit.per_channel else "")
        window = self._windows.setdefault(key, deque())
        now = time.monotonic() * self.speed
        while window and window[0] <= now - limit.per_s:
            window.popleft()
        if len(window) < limit.calls:
            window.append(now)
            return None
        return max(1, math.ceil(window[0] + limit.per_s - now)) if window else math.ceil(limit.per_s)

    async def _respond(self, request: web.Request) -> web.Response:
        payload = await request.json()
        payload["_key"] = request.match_info["key"]
        self.responses.append(payload)
        error = blocks_error(payload)
        self.calls.append(Call("response_url", payload, time.monotonic(), ok=error is None))
        return web.Response(status=400 if error else 200, text=error or "ok")


async def _params(request: web.Request) -> dict[str, Any]:
    """Arguments the way Slack accepts them: query string, form fields or a JSON body."""
    params: dict[str, Any] = dict(request.query)
    if request.method == "POST" and request.can_read_body:
        if request.content_type == "application/json":
            params.update(await request.json())
        else:
            params.update(await request.post())
    for key in ("blocks", "view", "prompts", "chunks"):
        if isinstance(params.get(key), str) and params[key].startswith(("[", "{")):
            params[key] = json.loads(params[key])
    return params


_TASK_MARKS = {"complete": "✓", "in_progress": "…", "error": "✗", "pending": "·"}


def visible_text(message: dict[str, Any]) -> str:
    """Everything a person would read in a message: section texts, plans, buttons, else the fallback."""
    parts = []
    for block in message.get("blocks") or []:
        if block.get("type") == "section":
            parts.append(block["text"]["text"])
        elif block.get("type") == "plan":
            parts.append("\n".join([block["title"], *(f"{_TASK_MARKS.get(t['status'], '·')} {t['title']}"
                                                       for t in block.get("tasks", []))]))
        elif block.get("type") in ("actions", "context"):
            parts.append("  ".join(f"[{e['text']['text']}]" if e.get("type") == "button" else e.get("text", "")
                                   for e in block.get("elements", [])))
    return "\n".join(parts) if parts else message.get("text", "")
