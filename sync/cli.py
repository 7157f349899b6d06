"""`docsbot sync` and `docsbot status` (registered into the `docsbot` command by `register`)."""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
from pathlib import Path

from pydantic import SecretStr

from docsbot.settings import Settings
from rag.embeddings import make_embedder
from rag.store import Store
from sync.scheduler import SyncRunner, start_scheduler
from sync.service import local_folder, run_sync
from sync.status import read_status, render_status
from sync.watcher import watch_folder
from sync.workcopy import is_local_uri

log = logging.getLogger("docsbot.sync")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sync", help="bring the index up to date with the docs repository (git or folder)")
    p.add_argument("--repo", help="repository URL or local path (default: $DOCSBOT_REPO)")
    p.add_argument("--branch", help="branch to follow (default: $DOCSBOT_BRANCH or the remote's HEAD)")
    p.add_argument("--json", action="store_true", help="print the sync report as JSON")
    p.add_argument("--watch", action="store_true",
                   help="keep running: sync on a schedule, and on changes to a local repository or folder")
    p.set_defaults(handler=cmd_sync)

    p = sub.add_parser("status", help="indexed commit, document and chunk counts, last sync outcome")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_status)


def with_source(settings: Settings, args: argparse.Namespace) -> Settings:
    updates: dict[str, object] = {}
    if args.repo:
        updates["repo"] = SecretStr(args.repo)
    if args.branch:
        updates["branch"] = args.branch
    return settings.model_copy(update=updates)


def cmd_sync(settings: Settings, args: argparse.Namespace) -> int:
    settings = with_source(settings, args)
    if args.watch:
        asyncio.run(watch_and_sync(settings))
        return 0
    report = run_sync(settings)
    print(json.dumps(report.to_json()) if args.json else report.render())
    return 0


def cmd_status(settings: Settings, args: argparse.Namespace) -> int:
    status = read_status(Store(settings.data_dir))
    print(json.dumps(status) if args.json else render_status(status))
    return 2 if status["index_error"] else 0


def watched_path(settings: Settings) -> Path | None:
    """The local folder or local repository whose changes trigger a sync, if any."""
    folder = local_folder(settings)
    if folder is not None:
        return folder
    url = settings.repo.get_secret_value() if settings.repo else ""
    return Path(url) if url and is_local_uri(url) and Path(url).is_dir() else None


async def watch_and_sync(settings: Settings) -> None:
    """The foreground `--watch` loop: scheduler, plus the watcher for a local source."""
    logging.getLogger("docsbot").setLevel(logging.INFO)
    runner = SyncRunner(settings, make_embedder(settings))
    scheduler = start_scheduler(settings, runner)
    path = watched_path(settings)
    try:
        if path is None:
            await asyncio.Event().wait()  # until Ctrl-C
        else:
            log.info("watching %s", path)
            await watch_folder(path, runner.trigger, settings.watch_debounce_ms)
    finally:
        scheduler.shutdown(wait=False)
