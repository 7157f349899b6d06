"""The bot's side of docs sync (`sync/`): `/docs status`, `/docs sync` and the git webhook route.

A bot process never writes the index: `/docs sync` and a push only record a sync request in the
state store, for the sync worker that holds the writer lease (`docsbot sync --watch`, or the
worker running inside `docsbot run`), and answer at once.
"""
from __future__ import annotations

import logging

from aiohttp import web

from bot.services import SyncCommand
from docsbot.settings import Settings
from rag.store import Store
from state.db import StateDB, StateUnavailable
from state.sync_requests import SyncRequests
from sync.status import current_status, render_status
from sync.webhook import webhook_route

log = logging.getLogger(__name__)



async def status_text(store: Store, db: StateDB) -> str:
    """What `/docs status` shows (the same as `docsbot status`)."""
    try:
        status = await current_status(store, db)
        return "*Docs index*\n```" + render_status(status) + "```"
    except Exception:
        log.exception("reading the index status failed")
        return "The docs index can't be read right now (it may still be being built)."


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

    return [webhook_route(settings, push)]
