"""`docsbot sync` and `docsbot status` (registered into the `docsbot` command by `register`)."""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
from pathlib import Path

from pydantic import SecretStr

from docsbot.observability import metrics
from docsbot.settings import Settings
from state.db import open_state
from sync.service import local_folder, run_sync
from sync.status import load_status, render_status
from sync.worker import SyncWorker
from sync.workcopy import is_local_uri

log = logging.getLogger("docsbot.sync")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("sync", help="bring the index up to date with the docs repository (git or folder)")
    p.add_argument("--repo", help="repository URL or local path (default: $DOCSBOT_REPO)")
    p.add_argument("--branch", help="branch to follow (default: $DOCSBOT_BRANCH or the remote's HEAD)")
    p.add_argument("--json", action="store_true", help="print the sync report as JSON")
    p.add_argument("--watch", action="store_true",
                   help="keep running as the sync worker: hold the index-writer lease (or stand by for it) and "
                        "sync on requests, on a schedule and on changes to a local repository or folder")
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
    status = load_status(settings)
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
    """The foreground `--watch` worker: stand by for the writer lease, then sync on requests, the
    schedule and (for a local source) file changes, until SIGINT or SIGTERM. Metrics are served on
    DOCSBOT_METRICS_PORT."""
    if settings.metrics_port:
        try:
            metrics.serve_metrics(settings.metrics_port)
            log.info("metrics at http://0.0.0.0:%d/metrics", settings.metrics_port)
        except OSError as exc:  # a second worker on this host: it still syncs, without metrics
            log.error("metrics not served: port %d: %s (set DOCSBOT_METRICS_PORT to a free port, or 0)",
                      settings.metrics_port, exc.strerror)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    db = await open_state(settings)
    try:
        await SyncWorker(settings, db, watch=watched_path(settings)).run(stop)
    finally:
        await db.close()
