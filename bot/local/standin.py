"""A local stand-in for the Slack Web API (and response URLs), for the console and the tests.

An aiohttp server on 127.0.0.1 that keeps a small workspace (users, user groups, channels with
members, messages) and records every call. It answers the way Slack does where it matters to
the bot: the bearer token is checked, a bot that is not in a channel gets `not_in_channel` /
`channel_not_found`, Block Kit limits are enforced (`invalid_blocks`, `msg_blocks_too_long`),
members are paged, and queued failures (an error or an HTTP 429 with Retry-After) and delays
can be injected per method. Slack's rate limits can be set per method (`limits`): past one, an
HTTP 429 `ratelimited` with Retry-After, on a clock that a benchmark may run faster (`speed`).
"""
from __future__ import annotations

import asyncio
import itertools
import json
import math
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

MAX_BLOCKS = 50
MAX_SECTION_TEXT = 3000
MAX_MESSAGE_CHARS = 13_000
MAX_UPDATE_TEXT = 4000


@dataclass
class Workspace:
    team_id: str = "T_DEMO"
    bot_user_id: str = "U_DOCSBOT"
    bot_id: str = "B_DOCSBOT"
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    usergroups: dict[str, list[str]] = field(default_factory=dict)
    channels: dict[str, dict[str, Any]] = field(default_factory=dict)  # each with "members"
    free_plan: bool = False  # usergroups.* fail with plan_upgrade_required

    def add_user(self, user_id: str, name: str, email: str = "", **flags: Any) -> None:
        self.users[user_id] = {"id": user_id, "name": name, "team_id": self.team_id, "deleted": False,
                               "is_bot": False, "is_restricted": False, "is_ultra_restricted": False,
                               "profile": {"email": email, "real_name": name}} | flags

    def add_channel(self, channel_id: str, name: str, members: list[str], **flags: Any) -> None:
        self.channels[channel_id] = {"id": channel_id, "name": name, "is_channel": True, "is_private": False,
                                     "is_im": False, "is_mpim": False, "is_shared": False,
                                     "is_ext_shared": False, "is_org_shared": False,
                                     "members": list(members)} | flags


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


class SlackStandIn:
    def __init__(self, workspace: Workspace, token: str) -> None:
        self.workspace = workspace
        self.token = token
        self.calls: list[Call] = []
        self.messages: dict[str, list[dict[str, Any]]] = {cid: [] for cid in workspace.channels}
        self.responses: list[dict[str, Any]] = []  # payloads posted to response URLs
        self.failures: dict[str, list[Failure]] = {}
        self.scopes: list[str] = []  # sent as Slack's x-oauth-scopes header when set
        # A test looks at the world as each call lands, before the caller gets its response.
        self.on_call: Callable[[Call], Awaitable[None]] | None = None
        self.delays: dict[str, float] = {}  # seconds a method takes to answer (a slow Slack)
        self.assistant_threads: dict[tuple[str, str], dict[str, Any]] = {}  # status, prompts, title
        self.home_tabs: dict[str, dict[str, Any]] = {}  # the Home tab published for each user
        self.limits: dict[str, Limit] = {}  # Slack's rate limits, by method
        # Slack seconds per real second: > 1 runs the limits' clock faster, and Retry-After is then
        # sent in real seconds, with decimals (Slack's whole seconds divided by the speed).
        self.speed = 1.0
        self._windows: dict[tuple[str, str], deque[float]] = {}
        self._ts = itertools.count(1)
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

    # -- what people do (not through the API) ------------------------------------------------------
    def next_ts(self) -> str:
        return f"{int(time.time())}.{next(self._ts):06d}"

    def post_as_user(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> str:
        """A person posts a message; returns its ts (the bot then gets an event for it)."""
        ts = self.next_ts()
        message = {"type": "message", "user": user, "text": text, "ts": ts}
        if thread_ts:
            message["thread_ts"] = thread_ts
        self.messages.setdefault(channel, []).append(message)
        return ts

    def fail_next(self, method: str, failure: Failure) -> None:
        self.failures.setdefault(method, []).append(failure)

    def calls_to(self, method: str, ok_only: bool = False) -> list[dict[str, Any]]:
        return [c.params for c in self.calls if c.method == method and (c.ok or not ok_only)]

    def dm_channel(self, user: str) -> str:
        for cid, channel in self.workspace.channels.items():
            if channel.get("is_im") and channel.get("user") == user:
                return cid
        cid = f"D_{user}"
        self.workspace.add_channel(cid, "", [user, self.workspace.bot_user_id], is_im=True, is_channel=False,
                                   is_private=True, user=user)
        self.messages[cid] = []
        return cid

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
        if token != self.token:
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
        error = _blocks_error(payload)
        self.calls.append(Call("response_url", payload, time.monotonic(), ok=error is None))
        return web.Response(status=400 if error else 200, text=error or "ok")

    # -- methods -----------------------------------------------------------------------------------------
    def _auth_test(self, p: dict[str, Any]) -> dict[str, Any]:
        ws = self.workspace
        return {"ok": True, "url": "https://demo.slack.invalid/", "team": "Demo", "user": "docsbot",
                "team_id": ws.team_id, "user_id": ws.bot_user_id, "bot_id": ws.bot_id, "is_enterprise_install": False}

    def _postable(self, channel: str) -> str | None:
        info = self.workspace.channels.get(channel)
        if info is None:
            return "channel_not_found"
        if self.workspace.bot_user_id not in info["members"]:
            return "channel_not_found" if info["is_private"] else "not_in_channel"
        return None

    def _chat_postMessage(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = p["channel"]
        if error := self._postable(channel) or _blocks_error(p):
            return {"ok": False, "error": error}
        message = {"type": "message", "user": self.workspace.bot_user_id, "bot_id": self.workspace.bot_id,
                   "text": p.get("text", ""), "blocks": p.get("blocks", []), "ts": self.next_ts()}
        if p.get("thread_ts"):
            message["thread_ts"] = p["thread_ts"]
        self.messages[channel].append(message)
        return {"ok": True, "channel": channel, "ts": message["ts"], "message": message}

    def _chat_update(self, p: dict[str, Any]) -> dict[str, Any]:
        if error := self._postable(p["channel"]) or _blocks_error(p):
            return {"ok": False, "error": error}
        if len(p.get("text", "")) > MAX_UPDATE_TEXT:
            return {"ok": False, "error": "msg_too_long"}
        message = self._message(p["channel"], p["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.get("bot_id") != self.workspace.bot_id:
            return {"ok": False, "error": "cant_update_message"}
        message.update(text=p.get("text", ""), blocks=p.get("blocks", []), edited=True)
        return {"ok": True, "channel": p["channel"], "ts": p["ts"], "text": message["text"]}

    def _chat_delete(self, p: dict[str, Any]) -> dict[str, Any]:
        if error := self._postable(p["channel"]):
            return {"ok": False, "error": error}
        message = self._message(p["channel"], p["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if message.get("bot_id") != self.workspace.bot_id:
            return {"ok": False, "error": "cant_delete_message"}
        self.messages[p["channel"]].remove(message)
        return {"ok": True, "channel": p["channel"], "ts": p["ts"]}

    def _message(self, channel: str, ts: str) -> dict[str, Any] | None:
        return next((m for m in self.messages.get(channel, []) if m["ts"] == ts), None)

    # Streaming (chat.startStream / appendStream / stopStream): a reply in a thread whose text
    # grows; `streaming` is True until it stops. Text arrives as `markdown_text` or as chunks.
    def _chat_startStream(self, p: dict[str, Any]) -> dict[str, Any]:
        channel = p["channel"]
        if error := self._postable(channel):
            return {"ok": False, "error": error}
        if not p.get("thread_ts"):
            return {"ok": False, "error": "invalid_arguments", "detail": "thread_ts is required"}
        if not self.workspace.channels[channel].get("is_im") and not p.get("recipient_user_id"):
            return {"ok": False, "error": "missing_recipient_user_id"}
        message = {"type": "message", "user": self.workspace.bot_user_id, "bot_id": self.workspace.bot_id,
                   "text": _stream_text(p), "blocks": [], "ts": self.next_ts(), "thread_ts": p["thread_ts"],
                   "streaming": True}
        self.messages[channel].append(message)
        return {"ok": True, "channel": channel, "ts": message["ts"]}

    def _chat_appendStream(self, p: dict[str, Any]) -> dict[str, Any]:
        message = self._message(p["channel"], p["ts"])
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        if not message.get("streaming"):
            return {"ok": False, "error": "message_not_in_streaming_state"}
        message["text"] += _stream_text(p)
        return {"ok": True, "channel": p["channel"], "ts": p["ts"]}

    def _chat_stopStream(self, p: dict[str, Any]) -> dict[str, Any]:
        appended = self._chat_appendStream(p)
        if not appended["ok"]:
            return appended
        if error := _blocks_error(p):
            return {"ok": False, "error": error}
        message = self._message(p["channel"], p["ts"])
        assert message is not None
        message.update(streaming=False, blocks=p.get("blocks") or [])
        return {"ok": True, "channel": p["channel"], "ts": p["ts"], "message": message}

    # The assistant panel: what the bot set on each thread, by (channel, thread_ts).
    def _assistant_threads_setStatus(self, p: dict[str, Any]) -> dict[str, Any]:
        return self._assistant_thread(p, "status", p.get("status", ""))

    def _assistant_threads_setSuggestedPrompts(self, p: dict[str, Any]) -> dict[str, Any]:
        prompts = p["prompts"] if isinstance(p["prompts"], list) else json.loads(p["prompts"])
        if not 1 <= len(prompts) <= 4 or not all(pr.get("title") and pr.get("message") for pr in prompts):
            return {"ok": False, "error": "invalid_arguments"}
        return self._assistant_thread(p, "prompts", prompts)

    def _assistant_threads_setTitle(self, p: dict[str, Any]) -> dict[str, Any]:
        return self._assistant_thread(p, "title", p["title"])

    def _assistant_thread(self, p: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
        channel = self.workspace.channels.get(p["channel_id"])
        if channel is None or not channel.get("is_im") or not p.get("thread_ts"):
            return {"ok": False, "error": "channel_not_found" if channel is None else "invalid_arguments"}
        self.assistant_threads.setdefault((p["channel_id"], p["thread_ts"]), {})[key] = value
        return {"ok": True}

    def _views_publish(self, p: dict[str, Any]) -> dict[str, Any]:
        view = p["view"] if isinstance(p["view"], dict) else json.loads(p["view"])
        if p["user_id"] not in self.workspace.users:
            return {"ok": False, "error": "user_not_found"}
        if view.get("type") != "home" or len(view.get("blocks", [])) > 100:
            return {"ok": False, "error": "invalid_arguments"}
        self.home_tabs[p["user_id"]] = view
        return {"ok": True, "view": view | {"id": f"VH{p['user_id']}"}}

    def _chat_postEphemeral(self, p: dict[str, Any]) -> dict[str, Any]:
        if error := self._postable(p["channel"]) or _blocks_error(p):
            return {"ok": False, "error": error}
        if p["user"] not in self.workspace.channels[p["channel"]]["members"]:
            return {"ok": False, "error": "user_not_in_channel"}
        return {"ok": True, "message_ts": self.next_ts()}

    def _conversations_info(self, p: dict[str, Any]) -> dict[str, Any]:
        info = self.workspace.channels.get(p["channel"])
        if info is None or (info["is_private"] and self.workspace.bot_user_id not in info["members"]):
            return {"ok": False, "error": "channel_not_found"}
        return {"ok": True, "channel": {k: v for k, v in info.items() if k != "members"}}

    def _conversations_members(self, p: dict[str, Any]) -> dict[str, Any]:
        info = self.workspace.channels.get(p["channel"])
        if info is None:
            return {"ok": False, "error": "channel_not_found"}
        start = int(p.get("cursor") or 0)
        limit = int(p.get("limit") or 100)
        page = info["members"][start:start + limit]
        more = start + limit < len(info["members"])
        return {"ok": True, "members": page, "response_metadata": {"next_cursor": str(start + limit) if more else ""}}

    def _conversations_replies(self, p: dict[str, Any]) -> dict[str, Any]:
        if p["channel"] not in self.messages:
            return {"ok": False, "error": "channel_not_found"}
        thread = [m for m in self.messages[p["channel"]] if p["ts"] in (m["ts"], m.get("thread_ts"))]
        if not thread:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": sorted(thread, key=lambda m: float(m["ts"])), "has_more": False}

    def _conversations_open(self, p: dict[str, Any]) -> dict[str, Any]:
        user = p["users"]
        if user not in self.workspace.users:
            return {"ok": False, "error": "user_not_found"}
        return {"ok": True, "channel": {"id": self.dm_channel(user)}}

    def _users_info(self, p: dict[str, Any]) -> dict[str, Any]:
        user = self.workspace.users.get(p["user"])
        return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}

    def _usergroups_users_list(self, p: dict[str, Any]) -> dict[str, Any]:
        if self.workspace.free_plan:
            return {"ok": False, "error": "plan_upgrade_required"}
        users = self.workspace.usergroups.get(p["usergroup"])
        return {"ok": True, "users": users} if users is not None else {"ok": False, "error": "no_such_subteam"}

    def _reactions_add(self, p: dict[str, Any]) -> dict[str, Any]:
        return {"ok": True} if self._postable(p["channel"]) is None else {"ok": False, "error": "not_in_channel"}

    def _views_open(self, p: dict[str, Any]) -> dict[str, Any]:
        view = p["view"] if isinstance(p["view"], dict) else json.loads(p["view"])
        if not p.get("trigger_id"):
            return {"ok": False, "error": "invalid_trigger_id"}
        if len(view.get("blocks", [])) > 100:
            return {"ok": False, "error": "invalid_arguments"}
        return {"ok": True, "view": view | {"id": f"V{self.next_ts().replace('.', '')}"}}


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


def _stream_text(p: dict[str, Any]) -> str:
    """The text a stream call adds: `markdown_text` and/or markdown_text chunks."""
    chunks = p.get("chunks") or []
    return (p.get("markdown_text") or "") + "".join(
        c.get("text", "") for c in chunks if c.get("type") == "markdown_text")


def _blocks_error(p: dict[str, Any]) -> str | None:
    """Slack's Block Kit limits: the error Slack would answer, or None."""
    message_blocks = p.get("blocks") or []
    if len(message_blocks) > MAX_BLOCKS:
        return "invalid_blocks"
    for block in message_blocks:
        if block.get("type") == "section" and len(block.get("text", {}).get("text", "")) > MAX_SECTION_TEXT:
            return "invalid_blocks"
    if len(json.dumps(message_blocks)) + len(p.get("text", "")) > MAX_MESSAGE_CHARS:
        return "msg_blocks_too_long"
    return None


def visible_text(message: dict[str, Any]) -> str:
    """Everything a person would read in a message: section texts, buttons, else the fallback."""
    parts = []
    for block in message.get("blocks") or []:
        if block.get("type") == "section":
            parts.append(block["text"]["text"])
        elif block.get("type") in ("actions", "context"):
            parts.append("  ".join(f"[{e['text']['text']}]" if e.get("type") == "button" else e.get("text", "")
                                   for e in block.get("elements", [])))
    return "\n".join(parts) if parts else message.get("text", "")
