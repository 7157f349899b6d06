"""The bot's side of docs sync (`sync/`): `/docs status`, `/docs sync` and the git webhook route."""
from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from bot.services import SyncCommand
from docsbot.settings import Settings
from rag.engine import Engine
from rag.store import Store
from sync.errors import SyncBusy, SyncError
from sync.progress import read_progress
from sync.scheduler import SyncRunner
from sync.service import run_sync
from sync.status import read_status, render_status
from sync.webhook import webhook_route

log = logging.getLogger(__name__)


def status_text(settings: Settings, store: Store) -> str:
    """What `/docs status` shows (the same as `docsbot status`); blocking, run it in a thread."""
    try:
        return "*Docs index*\n```" + render_status(read_status(store, read_progress(settings))) + "```"
    except Exception:
        log.exception("reading the index status failed")
        return "The docs index can't be read right now (it may still be being built)."


def sync_now(settings: Settings, engine: Engine) -> SyncCommand:
    async def run() -> str:
        """One sync in a worker thread; its summary, or why it did not run, in plain words."""
        try:
            report = await asyncio.to_thread(run_sync, settings, engine.embedder)
        except SyncBusy:
            return "A sync is already running; `/docs status` will show its result."
        except SyncError as exc:
            return f"The sync could not run: {exc}"
        except Exception:
            log.exception("/docs sync failed")
            return "The sync failed; the index keeps its last good state (details are in the bot's log)."
        return "*Sync done*\n```" + report.render() + "```"

    return run


def webhook_routes(settings: Settings, engine: Engine) -> list[web.RouteDef]:
    """`POST /hooks/git` (a push starts a sync in the background)."""
    return [webhook_route(settings, SyncRunner(settings, engine.embedder).trigger)]
