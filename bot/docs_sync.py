"""The bot's side of docs sync (`sync/`): `/docs status`, `/docs sync` and the git webhook route.

A bot process never writes the index: `/docs sync` and a push only record a sync request in the
state store, for the sync worker that holds the writer lease (`docsbot sync --watch`, or the
worker running inside `docsbot run`), and answer at once.
"""
from __future__ import annotations

import logging
import re
from typing import Any

from aiohttp import web

from bot.blocks import escape_within
from bot.services import SyncCommand
from foundation.settings import Settings
from foundation.wiring import sync_config
from rag import Index
from state.db import StateDB, StateUnavailable
from state.sync_requests import SOURCE_REQUEST, SyncRequests
from sync.status import current_status, render_status
from sync.webhook import sources_webhook_route, webhook_route

log = logging.getLogger(__name__)

LINE_LIMIT = 200  # characters of one line of `/docs status`
DISK_FULL = re.compile(r"no space left on device|disk is full|ENOSPC", re.IGNORECASE)
DETAILS = "admins see why in /docs status"


async def status_text(store: Index, db: StateDB, details: bool) -> str:
    """What `/docs status` shows: `docsbot status`, with its `details` (the state database's
    address, the index's path, error messages, the worker's host) for admins only; everyone else
    reads what is wrong in words. Every line is one line of at most LINE_LIMIT characters, so
    neither a long error nor a "```" in it can break the code block."""
    try:
        status = _one_line_values(await current_status(store, db))
    except Exception:
        log.exception("reading the index status failed")
        return "The docs index can't be read right now (it may still be being built)."
    lines = render_status(status if details else in_words(status)).splitlines()
    # No backtick can close the block early; escaping never makes a line longer than the limit.
    return "*Docs index*\n```" + "\n".join(escape_within(line.replace("`", "'"), LINE_LIMIT) for line in lines) + "```"


def in_words(status: dict[str, Any]) -> dict[str, Any]:
    """The status without what only admins may see, each problem said in words."""
    shown = dict(status)
    if shown.get("index_error"):
        shown["index_error"] = f"it can't be read right now ({_failure(shown['index_error'])})"
    if "state_error" in shown:
        shown["state_error"] = "the state database can't be reached right now"
    last = shown.get("last_sync")
    if last and not last["ok"]:
        shown["last_sync"] = {**last, "error": _failure(last.get("error") or "")}
    if shown.get("writer"):
        shown["writer"] = "running"
    if shown.get("stopped"):  # which host and process: admins only
        shown["stopped"] = "the worker"
    if shown.get("sources"):  # a source's fetch error may name its host: admins only
        shown["sources"] = [{**source, "error": source["error"] and _failure(source["error"])}
                            for source in shown["sources"]]
    if shown.get("mirror"):
        shown["mirror"] = {**shown["mirror"], "mirror_of": "the shared index", "error": "it can't be reached"}
    return shown


def _failure(error: str) -> str:
    return "the server's disk is full" if DISK_FULL.search(error) else DETAILS


def _one_line_values(value: Any) -> Any:
    """Every string in the status on one line (a multi-line error would spill over many)."""
    if isinstance(value, str):
        return " ".join(value.split())
    if isinstance(value, dict):
        return {key: _one_line_values(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_one_line_values(item) for item in value]
    return value



def request_sync(requests: SyncRequests) -> SyncCommand:
    async def run() -> str:
        """Record the request for the sync worker; the answer says what happens next."""
        try:
            await requests.request("command")
        except StateUnavailable:
            log.exception("/docs sync could not be recorded")
            return "Couldn't record the sync request (the state database is unreachable); please try again."
        return "Sync requested: the sync worker runs it next. `/docs status` shows its result."

    return run


def webhook_routes(settings: Settings, requests: SyncRequests) -> list[web.RouteDef]:
    """`POST /hooks/git` (a push records a sync request)."""

    async def push() -> None:
        await requests.request("webhook")

    async def push_source(name: str) -> None:
        await requests.request(f"{SOURCE_REQUEST}{name}")

    config = sync_config(settings)
    if config.sources is not None:
        return [sources_webhook_route(config, push_source)]
    return [webhook_route(config, push)]
