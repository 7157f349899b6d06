"""The `docsbot` command: index, ask, run (and the sync and bot commands registered by them)."""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from pathlib import Path

from pydantic import ValidationError

from bot.cli import register as register_bot, run_bot
from docsbot.errors import UserError
from docsbot.settings import Settings
from rag.embeddings import EmbeddingError
from rag.engine import Engine
from rag.indexer import IndexStats
from rag.levels import Level
from rag.store import StoreError
from sync.folder import ensure_index, index_folder
from sync.cli import register as register_sync
from sync.gitcmd import GitError
from state.db import StateUnavailable, database_url, migrate



def print_index(stats: IndexStats, as_json: bool) -> None:
    if as_json:
        print(json.dumps({
            "documents": stats.documents, "chunks": stats.chunks, "chunks_embedded": stats.chunks_embedded,
            "chunks_reused": stats.chunks_reused, "deleted": stats.deleted, "seconds": round(stats.seconds, 2),
            "skipped": [{"path": p, "reason": r} for p, r in stats.skipped],
        }))
        return
    print(f"indexed {stats.documents} documents, {stats.chunks} chunks "
          f"({stats.chunks_embedded} embedded, {stats.chunks_reused} reused) in {stats.seconds:.1f}s")
    for path, reason in stats.skipped:
        print(f"skipped {path}: {reason}")
    if stats.documents == 0:
        print("warning: no documents were indexed (empty folder, or every file was skipped)")


def render_answer(answer_json: dict) -> str:
    lines = [answer_json["answer"]]
    for c in answer_json["citations"]:
        where = f"{c['title']} › {c['section']}" if c["section"] else c["title"]
        bits = [f"[{c['n']}] {where}", c["doc_path"]]
        if c["version"]:
            bits.append(f"v{c['version']}")
        if c["commit"]:
            bits.append(c["commit"][:7])
        if c["commit_date"]:
            bits.append(c["commit_date"][:10])
        if c["url"]:
            bits.append(c["url"])
        lines.append("  " + " · ".join(bits))
    return "\n".join(lines)


def cmd_index(settings: Settings, args: argparse.Namespace) -> int:
    engine = Engine.from_settings(settings)
    print_index(index_folder(engine, Path(args.docs or settings.docs_dir)), args.json)
    return 0


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    engine = Engine.from_settings(settings)
    ensure_index(engine, Path(args.docs) if args.docs else None)
    answer = asyncio.run(engine.ask(args.question, Level.parse(args.level)))
    print(json.dumps(answer.to_json(), indent=2) if args.json else render_answer(answer.to_json()))
    return 0


def cmd_run(settings: Settings, args: argparse.Namespace) -> int:
    """Index the docs folder, then serve Slack (when SLACK_BOT_TOKEN is set) or open the local console,
    with the sync worker keeping that folder indexed."""
    if args.docs:
        settings = settings.model_copy(update={"docs_dir": args.docs})
    engine = Engine.from_settings(settings)
    wait_s = settings.sync_lease_ttl_s + settings.sync_lease_renew_s  # a console killed just before
    print_index(index_folder(engine, Path(settings.docs_dir), wait_s), False)
    return run_bot(settings, engine)


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    """Bring the state database's schema up to date (also done by every process at start)."""
    print(f"state database schema at revision {migrate(database_url(settings))}")
    return 0


def env_name(field: str) -> str:
    alias = Settings.model_fields[field].validation_alias if field in Settings.model_fields else None
    return alias.choices[0] if alias is not None else f"DOCSBOT_{field.upper()}"


def load_settings() -> Settings:
    """Settings from the environment; a bad value is a UserError naming the variable."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(f"{env_name(str(e['loc'][0]))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
        raise UserError(f"invalid configuration: {problems}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docsbot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    levels = [level.name for level in Level]

    p = sub.add_parser("index", help="index a docs folder (full rebuild)")
    p.add_argument("--docs", help="docs folder (default: $DOCSBOT_DOCS_DIR or docs-sync)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("ask", help="answer one question")
    p.add_argument("question")
    p.add_argument("--level", choices=levels, default="public", help="the asker's access level")
    p.add_argument("--docs", help="index this folder first if the index was built from another")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_ask)

    p = sub.add_parser("run", help="index the docs, then serve Slack (with SLACK_BOT_TOKEN) or a local console")
    p.add_argument("--docs")
    p.set_defaults(handler=cmd_run)
    p = sub.add_parser("migrate", help="create or upgrade the state database's schema (DOCSBOT_DATABASE_URL)")
    p.set_defaults(handler=cmd_migrate)
    register_bot(sub)
    register_sync(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_settings()
        return args.handler(settings, args)
    except (UserError, StoreError, EmbeddingError, GitError, StateUnavailable, ValueError) as exc:
        print(f"docsbot: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
