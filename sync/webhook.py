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
import re
from functools import partial
from urllib.parse import urlsplit
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


def pushed_repository(body: bytes) -> set[str]:
    """The pushed repository's addresses in a push event, normalised (`repo_key`): GitHub's
    `repository` clone, ssh and web URLs, GitLab's `project` ones (and its older `repository`)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return set()
    keys = set()
    for section in ("repository", "project"):
        value = payload.get(section) if isinstance(payload, dict) else None
        if isinstance(value, dict):
            for name in ("clone_url", "ssh_url", "git_url", "html_url", "url", "git_http_url", "git_ssh_url",
                         "web_url", "homepage"):
                if isinstance(value.get(name), str) and value[name]:
                    keys.add(repo_key(value[name]))
    return keys


def repo_key(url: str) -> str:
    """A repository address without scheme, credentials, `.git` and case: `host/org/repo` for
    `https://user@host/org/repo.git`, `git@host:org/repo`, `ssh://git@host/org/repo`; a local path as is."""
    text = url.strip()
    if "://" in text:
        parts = urlsplit(text)
        text = f"{parts.hostname or ''}{parts.path}"
    elif (scp := re.match(r"^[^@/\s]+@([^:/]+):(.+)$", text)) is not None:
        text = f"{scp[1]}/{scp[2]}"
    return re.sub(r"(\.git)?/*$", "", text).lower()


async def _handle(request: web.Request, secret: str | None, branch: str, trigger: Callable[[], Awaitable[None]],
                  body: bytes) -> web.Response:
    """A push checked against one repository's secret and branch, then its sync requested."""
    if secret is None:
        return web.json_response(
            {"error": "webhook disabled: set DOCSBOT_WEBHOOK_SECRET to the secret configured in the git host"},
            status=503,
        )
    if not signature_ok(secret.encode(), body, request.headers):
        log.warning("webhook from %s refused: bad or missing signature", request.remote)
        return web.json_response({"error": "bad or missing signature"}, status=401)
    if request.headers.get("X-GitHub-Event") == "ping":
        return web.json_response({"ok": "pong"})
    ref = pushed_ref(body)
    if branch and ref and ref != f"refs/heads/{branch}":
        return web.json_response({"ignored": f"push to {ref}, not {branch}"}, status=202)
    try:
        await trigger()
    except StateUnavailable as exc:
        log.warning("push webhook not recorded: %s", exc)
        return web.json_response({"error": "the sync request could not be recorded; redeliver later"}, status=503)
    return web.json_response({"sync": "requested"}, status=202)


def webhook_route(
    config: SyncConfig, trigger: Callable[[], Awaitable[None]], path: str = HOOK_PATH
) -> web.RouteDef:
    """The aiohttp route; `trigger` records a sync request (and returns once it is recorded)."""

    async def handle(request: web.Request) -> web.Response:
        return await _handle(request, config.webhook_secret, config.branch, trigger, await request.read())

    return web.post(path, handle)


def sources_webhook_route(
    config: SyncConfig, trigger: Callable[[str], Awaitable[None]], path: str = HOOK_PATH
) -> web.RouteDef:
    """The route with several sources: a push names its repository, which picks the source whose
    secret is checked and whose sync `trigger(name)` requests. A push of no configured repository
    is refused as a bad signature is (no answer tells which repositories are configured)."""
    assert config.sources is not None
    sources = config.sources

    async def handle(request: web.Request) -> web.Response:
        body = await request.read()
        pushed = pushed_repository(body)
        for source in sources():
            if source.sync.repo is not None and repo_key(source.sync.repo) in pushed:
                return await _handle(request, source.sync.webhook_secret, source.sync.branch,
                                     partial(trigger, source.name), body)
        log.warning("webhook from %s refused: no source has the pushed repository", request.remote)
        return web.json_response({"error": "bad or missing signature"}, status=401)

    return web.post(path, handle)
