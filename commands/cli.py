"""The `docsbot` command: index, ask, run (and the sync and bot commands registered by them)."""
from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

# Only what building the parser needs is imported here: each command imports its own modules
# (the model, LanceDB, Bolt, SQLAlchemy, OpenTelemetry), so `docsbot --help` starts in a blink.
from bot.cli import register as register_bot
from commands.doctor import register as register_doctor
from foundation.errors import UserError
from commands.mcp_command import register as register_mcp
from commands.propose_command import register as register_propose
from commands.report_command import register as register_report
from commands.sync_commands import register as register_sync
import rag
from rag import Level
from sync.report import short_commit

if TYPE_CHECKING:
    from foundation.settings import Settings
    from rag import Answer, IndexStats

# Errors a command reports as one line (exit 2), by module: a class is looked up only once its
# module is loaded, since an error of a module that was never imported cannot have been raised.
REPORTED = {"rag.store.errors": "StoreError", "rag.embeddings": "EmbeddingError", "sync.gitcmd": "GitError",
            "sync.errors": "SyncError", "state.db": "StateUnavailable", "state.errors": "StateConfigError",
            "proposals.branch": "ProposalError"}


def print_index(stats: IndexStats, as_json: bool, settings: Settings, docs: Path) -> None:
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
    for line in rag.unindexed_files(docs, settings.include, settings.exclude).lines():
        print(f"not indexed: {line}")
    if stats.documents == 0:
        left_out = rag.left_out_pages(docs, settings.include, settings.exclude)
        print(f"warning: {left_out.warning()}" if left_out is not None
              else "warning: no documents were indexed (empty folder, or every file was skipped)")


def render_answer(answer_json: dict) -> str:
    lines = [answer_json["answer"]]
    if answer_json.get("fallback"):
        lines.append("(quoted from the docs: the AI's answer could not be used this time)")
    near = answer_json.get("near_miss")
    listed = [("closest", near)] if near else [(f"[{c['n']}]", c) for c in answer_json["citations"]]
    for mark, c in listed:
        where = f"{c['title']} › {c['section']}" if c["section"] else c["title"]
        bits = [f"{mark} {where}", *([c["warning"]] if c.get("warning") else []), c["doc_path"]]
        if c["version"]:
            bits.append(f"v{c['version']}")
        if c["commit"]:
            bits.append(short_commit(c["commit"]))
        if c["commit_date"]:
            bits.append(c["commit_date"][:10])
        if c.get("page_url"):  # the page on the docs site, then the commit's permalink
            bits.append(c["page_url"])
            if c["url"]:
                bits.append(f"commit {c['url']}")
        elif c["url"]:
            bits.append(c["url"])
        lines.append("  " + " · ".join(bits))
    return "\n".join(lines)


def cmd_index(settings: Settings, args: argparse.Namespace) -> int:
    from commands.readiness import say_readable
    from foundation.wiring import lease_config, open_engine
    from rag import hidden_progress
    from sync.folder import index_folder

    docs = Path(args.docs or settings.docs_dir)
    with hidden_progress() if args.json else nullcontext():  # --json: nothing but the JSON
        stats = index_folder(open_engine(settings), lease_config(settings), docs, rebuild=args.rebuild)
    print_index(stats, args.json, settings, docs)
    say_readable(settings, args.json)
    return 0


def cmd_ask(settings: Settings, args: argparse.Namespace) -> int:
    """Print the answer; the exit status says how it went (ASK_CODES). An index that is missing or
    cannot be read is an error, still printed as an answer with `abstain_reason:
    index_unavailable` under --json."""
    import asyncio

    from foundation.wiring import open_engine
    from rag import StoreError

    engine = open_engine(settings)
    level = Level.parse(args.level)
    try:
        if args.docs:  # the lease (and the state database's SQLAlchemy, ~0.3 s) only when it may index
            from foundation.wiring import lease_config
            from sync.folder import ensure_index

            ensure_index(engine, lease_config(settings), Path(args.docs))
        answer = asyncio.run(engine.ask(args.question, level))
    except StoreError as exc:
        answer = unavailable(args.question, level, str(exc))
    if answer.abstain_reason == "index_unavailable" and not args.json:
        raise UserError(answer.detail)
    if answer.abstain_reason == "no_access" and not args.json:
        answer.answer = no_access_here(level)
    print(json.dumps(answer.to_json(), indent=2) if args.json else render_answer(answer.to_json()))
    return ASK_EXIT.get(answer.abstain_reason or "", 0 if answer.answered else 1)


def no_access_here(level: Level) -> str:
    """The no-access abstention as a terminal says it: no conversation, and the flag to use."""
    higher = "|".join(other.name for other in Level if other > level)
    return (f"I can't answer this at the `{level.name}` level: the documents that cover it are above it. "
            f"To read them from here: docsbot ask --level {higher} QUESTION")


# `docsbot ask`'s exit status, by abstention reason; shown by `docsbot ask --help`.
ASK_EXIT = {"index_unavailable": 2}
ASK_CODES = """exit status:
  0  answered (when the AI service failed or its citations did not check out, the docs are quoted
     instead: `fallback` in --json says why)
  1  declined or not sure: nothing in the docs covers it, the documents that do are above --level,
     or only the closest passage is shown
  2  error: bad usage or configuration, or the index is missing or cannot be read"""


def unavailable(question: str, level: Level, detail: str) -> Answer:
    from rag import ABSTAIN_MESSAGES, Answer, Diagnostics

    return Answer(question, ABSTAIN_MESSAGES["index_unavailable"], False, "index_unavailable", [], Diagnostics(),
                  level.name, detail=detail)


def question_text(value: str) -> str:
    """argparse type of the question: an empty or blank one is a usage error (exit 2)."""
    if not value.strip():
        raise argparse.ArgumentTypeError("the question is empty")
    return value


def cmd_run(settings: Settings, args: argparse.Namespace) -> int:
    """Index the docs folder (or sync the sources file's repositories), then serve Slack (when
    SLACK_BOT_TOKEN is set) or open the local console, with the sync worker keeping them indexed."""
    from bot.cli import run_bot
    from commands.readiness import say_readable
    from foundation.wiring import lease_config, open_engine, sync_config
    from sync.folder import index_folder

    if args.docs:
        settings = settings.model_copy(update={"docs_dir": args.docs})
    # the sources file's repositories, synced as `docsbot sync` does (a bad file: one line, before the model loads)
    sources = sync_config(settings) if settings.sources else None
    engine = open_engine(settings)
    if sources is not None:
        from sync.service import run_sync

        print(run_sync(sources, engine.embedder).render())
    else:  # index_folder waits out the lease of a console killed just before
        docs = Path(settings.docs_dir)
        print_index(index_folder(engine, lease_config(settings), docs), False, settings, docs)
    say_readable(settings, False)
    return run_bot(settings, engine)


def cmd_migrate(settings: Settings, args: argparse.Namespace) -> int:
    """Bring the state database's schema up to date (also done by every process at start)."""
    from foundation.wiring import database_url
    from state.db import migrate

    print(f"state database schema at revision {migrate(database_url(settings))}")
    return 0


def env_name(field: str) -> str:
    """The variable that sets a settings field (an error's location: a field name or an alias)."""
    from foundation.settings import Settings

    if field not in Settings.model_fields:
        return field if field.isupper() else f"DOCSBOT_{field.upper()}"
    from pydantic import AliasChoices

    alias = Settings.model_fields[field].validation_alias
    if isinstance(alias, AliasChoices) and isinstance(alias.choices[0], str):
        return alias.choices[0]
    return f"DOCSBOT_{field.upper()}"


def load_settings() -> Settings:
    """Settings from the environment; a bad value is a UserError naming the variable, one line."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from foundation.settings import Settings

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
                        "not valid JSON (a list like [\"**/*.md\"] "
                        "or a mapping like {\"public/**\": \"public\"})") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docsbot", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    levels = [level.name for level in Level]

    p = sub.add_parser("index", help="index a docs folder (full rebuild)")
    p.add_argument("--docs", help="docs folder (default: $DOCSBOT_DOCS_DIR or docs-sync)")
    p.add_argument("--json", action="store_true", help="print the counts and skipped files as JSON")
    p.add_argument("--rebuild", action="store_true",
                   help="build a new index from the docs alone and swap it in (repairs an unreadable index; "
                        "the old one answers until the new one is complete)")
    p.set_defaults(handler=cmd_index)

    p = sub.add_parser("ask", help="answer one question", epilog=ASK_CODES,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("question", type=question_text, help="the question, quoted")
    p.add_argument("--level", choices=levels, default="public",
                   help="the asker's access level (default: public)")
    p.add_argument("--docs", help="index this folder first if the index was built from another")
    p.add_argument("--json", action="store_true", help="print the answer, citations and diagnostics as JSON")
    p.set_defaults(handler=cmd_ask)

    p = sub.add_parser("run", help="index the docs, then serve Slack (with SLACK_BOT_TOKEN) or a local console")
    p.add_argument("--docs", help="docs folder (default: $DOCSBOT_DOCS_DIR or docs-sync)")
    p.set_defaults(handler=cmd_run)
    p = sub.add_parser("migrate", help="create or upgrade the state database's schema (DOCSBOT_DATABASE_URL)")
    p.set_defaults(handler=cmd_migrate)
    register_bot(sub)
    register_sync(sub)
    register_report(sub)
    register_doctor(sub)
    register_mcp(sub)
    register_propose(sub)
    return parser


def configure_observability(settings: Settings, args: argparse.Namespace) -> None:
    """Logging as configured (secrets masked), and traces when OTEL_EXPORTER_OTLP_ENDPOINT is set.
    Without DOCSBOT_LOG_LEVEL a service logs at INFO, a one-shot command or the console at WARNING."""
    secrets = [settings.slack_bot_token, settings.slack_signing_secret, settings.slack_app_token,
               settings.openai_api_key, settings.webhook_secret, settings.repo, settings.database_url,
               settings.forge_token]
    service = (args.command == "serve" or (args.command == "sync" and getattr(args, "watch", False))
               or (args.command == "run" and settings.slack_bot_token is not None))
    from foundation.observability.logs import setup_logging

    setup_logging(settings.log_level or ("INFO" if service else "WARNING"), settings.log_format,
                  settings.log_questions, secrets)
    if not settings.log_level:  # a long index or sync still says how far it is (~10 s), on a terminal or not
        logging.getLogger("docsbot.progress").setLevel(logging.INFO)
    if os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):  # else the API's no-op tracer, never imported here
        from foundation.observability.tracing import setup_tracing

        setup_tracing("docsbot-sync" if args.command == "sync" else "docsbot")


def main(argv: list[str] | None = None) -> int:
    from rag import bound_allocator

    bound_allocator()  # before any thread starts: a sync's or the bot's memory must not grow with the docs
    args = build_parser().parse_args(argv)
    try:
        settings = load_settings()
        configure_observability(settings, args)
        return args.handler(settings, args)
    except Exception as exc:
        if not reported(exc):
            raise
        print(f"docsbot: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def reported(exc: Exception) -> bool:
    """Whether `exc` is a problem a person must act on (said in one line) rather than a bug."""
    if isinstance(exc, (UserError, ValueError)):
        return True
    return any(isinstance(exc, getattr(sys.modules[module], name))
               for module, name in REPORTED.items() if module in sys.modules)


if __name__ == "__main__":
    sys.exit(main())
