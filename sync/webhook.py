"""`POST /hooks/git`: a push webhook from GitHub or GitLab that starts a sync at once.

GitHub signs the raw body: `X-Hub-Signature-256: sha256=<HMAC-SHA256(secret, body)>`; GitLab sends
the secret itself in `X-Gitlab-Token`. Both are compared in constant time. No secret configured
means every request is refused (503): an open endpoint would let anyone trigger syncs. A valid
push only records a sync request (202) for the sync worker; when the state store cannot record it
the answer is 503, so the git host shows the failed delivery and can redeliver it.
"""
from __future__ import annotations

import hashlib
import hmac
import json
import logging
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web

from sync.config import SyncConfig
from state.db import StateUnavailable

log = logging.getLogger("docsbot.sync")

HOOK_PATH = "/hooks/git"


def signature_ok(secret: bytes, body: bytes, headers: Mapping[str, str]) -> bool:
    github = headers.get("X-Hub-Signature-256")
    if github is not None:
        expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        return hmac.compare_digest(github.encode(), expected.encode())
    gitlab = headers.get("X-Gitlab-Token")
    if gitlab is not None:
        return hmac.compare_digest(gitlab.encode(), secret)
    return False


def pushed_ref(body: bytes) -> str | None:
    """The `ref` of a push event (both providers), or None when the body has none."""
    try:
        payload = json.loads(body)
    except ValueError:
        return None
    return payload.get("ref") if isinstance(payload, dict) else None


def webhook_route(
    config: SyncConfig, trigger: Callable[[], Awaitable[None]], path: str = HOOK_PATH
) -> web.RouteDef:
    """The aiohttp route; `trigger` records a sync request (and returns once it is recorded)."""

    async def handle(request: web.Request) -> web.Response:
        if config.webhook_secret is None:
            return web.json_response(
                {"error": "webhook disabled: set DOCSBOT_WEBHOOK_SECRET to the secret configured in the git host"},
                status=503,
            )
        body = await request.read()
        if not signature_ok(config.webhook_secret.encode(), body, request.headers):
            log.warning("webhook from %s refused: bad or missing signature", request.remote)
            return web.json_response({"error": "bad or missing signature"}, status=401)
        if request.headers.get("X-GitHub-Event") == "ping":
            return web.json_response({"ok": "pong"})
        ref = pushed_ref(body)
        if config.branch and ref and ref != f"refs/heads/{config.branch}":
            return web.json_response({"ignored": f"push to {ref}, not {config.branch}"}, status=202)
        try:
            await trigger()
        except StateUnavailable as exc:
            log.warning("push webhook not recorded: %s", exc)
            return web.json_response({"error": "the sync request could not be recorded; redeliver later"}, status=503)
        return web.json_response({"sync": "requested"}, status=202)

    return web.post(path, handle)
