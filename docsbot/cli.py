"""The `docsbot` command: index, ask, run (and the sync and bot commands registered by them)."""
from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
from pathlib import Path

from pydantic import ValidationError
from pydantic_settings import SettingsError

from bot.cli import register as register_bot, run_bot
from docsbot.doctor import register as register_doctor
from docsbot.errors import UserError
from docsbot.observability.logs import setup_logging
from docsbot.observability.tracing import setup_tracing
from docsbot.settings import Settings
from rag.answer import ABSTAIN_MESSAGES, Answer, Diagnostics
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
    print_index(index_folder(engine, Path(args.docs or settings.docs_dir), rebuild=args.rebuild), args.json)
    return 0


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    """Print the answer; an index that is missing or cannot be read is an error (exit 2), still
    printed as an answer with `abstain_reason: index_unavailable` under --json."""
    engine = Engine.from_settings(settings)
    level = Level.parse(args.level)
    try:
        ensure_index(engine, Path(args.docs) if args.docs else None)
        answer = asyncio.run(engine.ask(args.question, level))
    except StoreError as exc:
        answer = unavailable(args.question, level, str(exc))
    if answer.abstain_reason == "index_unavailable" and not args.json:
        raise UserError(answer.detail)
    print(json.dumps(answer.to_json(), indent=2) if args.json else render_answer(answer.to_json()))
    return 2 if answer.abstain_reason == "index_unavailable" else 0


def unavailable(question: str, level: Level, detail: str) -> Answer:
    return Answer(question, ABSTAIN_MESSAGES["index_unavailable"], False, "index_unavailable", [], Diagnostics(),
                  level.name, detail=detail)


def question_text(value: str) -> str:
    """argparse type of the question: an empty or blank one is a usage error (exit 2)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the question is empty")
    return value


def cmd_run(settings: Settings, args: argparse.Namespace) -> int:
    """Index the docs folder, then serve Slack (when SLACK_BOT_TOKEN is set) or open the local console,
    with the sync worker keeping that folder indexed."""
    if args.docs:
        settings = settings.model_copy(update={"docs_dir": args.docs})
    engine = Engine.from_settings(settings)
    print_index(index_folder(engine, Path(settings.docs_dir)), False)  # waits out a console killed just before
    return run_bot(settings, engine)


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    """Bring the state database's schema up to date (also done by every process at start)."""
    print(f"state database schema at revision {migrate(database_url(settings))}")
    return 0


def env_name(field: str) -> str:
    """The variable that sets a settings field (an error's location: a field name or an alias)."""
    if field not in Settings.model_fields:
        return field if field.isupper() else f"DOCSBOT_{field.upper()}"
    alias = Settings.model_fields[field].validation_alias
    return alias.choices[0] if alias is not None else f"DOCSBOT_{field.upper()}"


def load_settings() -> Settings:
    """Settings from the environment; a bad value is a UserError naming the variable, one line."""
    try:
        return Settings()
    except ValidationError as exc:
        problems = "; ".join(
            (f"{env_name(str(e['loc'][0]))}: " if e["loc"] else "") + e["msg"].removeprefix("Value error, ")
            for e in exc.errors()
        )
        raise UserError(f"invalid configuration: {problems}") from None
    except SettingsError as exc:  # a list or mapping variable that is not valid JSON
        field = re.search(r'field "(\w+)"', str(exc))
        raise UserError(f"invalid configuration: {env_name(field.group(1)) if field else exc}: "
                        "not valid JSON (a list like [\"**/*.md\"] or a mapping like {\"public/**\": \"public\"})") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docsbot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    levels = [level.name for level in Level]

    p = sub.add_parser("index", help="index a docs folder (full rebuild)")
    p.add_argument("--docs", help="docs folder (default: $DOCSBOT_DOCS_DIR or docs-sync)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--rebuild", action="store_true",
                   help="build a new index from the docs alone and swap it in (repairs an unreadable index; "
                        "the old one answers until the new one is complete)")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("ask", help="answer one question")
    p.add_argument("question", type=question_text)
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
    register_doctor(sub)
    return parser


def configure_observability(settings: Settings, args: argparse.Namespace) -> None:
    """Logging as configured (secrets masked), and traces when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    Without DOCSBOT_LOG_LEVEL a service logs at INFO, a one-shot command or the console at WARNING."""
    secrets = [settings.slack_bot_token, settings.slack_signing_secret, settings.slack_app_token,
               settings.openai_api_key, settings.webhook_secret, settings.repo, settings.database_url]
    service = (args.command == "serve" or (args.command == "sync" and getattr(args, "watch", False))
               or (args.command == "run" and settings.slack_bot_token is not None))
    setup_logging(settings.log_level or ("INFO" if service else "WARNING"), settings.log_format,
                  settings.log_questions, secrets)
    setup_tracing("docsbot-sync" if args.command == "sync" else "docsbot")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        configure_observability(settings, args)
        return args.handler(settings, args)
    except (UserError, StoreError, EmbeddingError, GitError, StateUnavailable, ValueError) as exc:
        print(f"docsbot: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
