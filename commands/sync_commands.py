"""`docsbot sync` and `docsbot status` (registered into the `docsbot` command by `register`): they build
the sync's configuration from the settings and run `sync`."""
from __future__ import annotations

import argparse
import json
import logging
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the commands import what they run, so that registering them costs nothing
    from foundation.settings import Settings

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
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.set_defaults(handler=cmd_status)


def with_source(settings: Settings, args: argparse.Namespace) -> Settings:
    from pydantic import SecretStr

    updates: dict[str, object] = {}
    if args.repo:
        updates["repo"] = SecretStr(args.repo)
    if args.branch:
        updates["branch"] = args.branch
    return settings.model_copy(update=updates)


def cmd_sync(settings: Settings, args: argparse.Namespace) -> int:
    import asyncio

    from commands.readiness import say_readable
    from foundation.wiring import sync_config
    from rag import hidden_progress
    from sync.lease import writer_lease
    from sync.unchanged import unchanged_sync

    settings = with_source(settings, args)
    if args.watch:
        asyncio.run(watch_and_sync(settings))
        return 0
    config = sync_config(settings)
    with writer_lease(config.lease) as held:
        unchanged = unchanged_sync(config, held)  # a folder with nothing new: no LanceDB, no model
        if unchanged is None:
            from sync.service import run_sync

            with hidden_progress() if args.json else nullcontext():  # --json: nothing but the JSON
                report = run_sync(config, lease=held)
        else:
            report = unchanged[0]
    print(json.dumps(report.to_json()) if args.json else report.render())
    say_readable(settings, args.json, None if unchanged is None else unchanged[1].rank_counts())
    return 0


def cmd_status(settings: Settings, args: argparse.Namespace) -> int:
    from foundation.links import docs_root
    from foundation.wiring import sync_config
    from rag.unindexed import unindexed_files
    from sync.status import load_status, render_status

    status = load_status(sync_config(settings))
    root = docs_root(settings)
    found = bool(root) and Path(root).is_dir()
    unindexed = unindexed_files(Path(root), settings.include, settings.exclude).lines() if found else []
    print(json.dumps({**status, "unindexed": unindexed}) if args.json
          else "\n".join([render_status(status), *(f"not indexed: {line}" for line in unindexed)]))
    return 2 if status["index_error"] else 0


async def watch_and_sync(settings: Settings) -> None:
    """The foreground `--watch` worker: stand by for the writer lease, then sync on requests, the
    schedule and (for a local source) file changes, until SIGINT or SIGTERM. Metrics are served on
    DOCSBOT_METRICS_PORT."""
    import asyncio
    import signal

    from bot.surfaces import NAMES
    from foundation.observability import metrics
    from foundation.wiring import sync_config
    from state.opening import open_state
    from sync.service import watched_path
    from sync.worker import SyncWorker

    if settings.metrics_port:
        metrics.declare_surfaces(NAMES)  # the series the bot's /metrics has: a sum over both sees each surface
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
    config = sync_config(settings)
    db = await open_state(config.state)
    try:
        await SyncWorker(config, db, watch=watched_path(config)).run(stop)
    finally:
        await db.close()
