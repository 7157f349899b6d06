"""`docsbot doctor`: after a deploy, check everything the bot depends on, with a fix for each problem.

Each check gives ok, warning (works, but probably not as intended) or failed (the bot cannot work
as configured), and the exit status is 1 when anything failed. The checks only read: nothing is
written to Slack, the index or the LLM beyond a one-token completion.
"""
from __future__ import annotations

import argparse
import json
import logging
import re
from collections.abc import Callable
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from commands.doctor_finding import Finding
from commands.doctor_manifest import MANIFEST
from commands.readiness import (
    Readable, links_of, member_level, readable_documents, readable_fix, remote_of, web_from_remote,
)

# Each check imports the client it needs: registering `doctor` in the CLI's parser costs nothing.
if TYPE_CHECKING:
    from foundation.settings import Settings
    from rag import Embedder

TIMEOUT_S = 10.0
SAMPLE_DOCS = (Path(__file__).resolve().parent.parent / "docs-sync").resolve()  # what `make run` indexes
_SLACK_ID = {"users": re.compile(r"^[UW][A-Z0-9_]{2,}$"), "admins": re.compile(r"^[UW][A-Z0-9_]{2,}$"),
             "groups": re.compile(r"^S[A-Z0-9_]{2,}$"), "channels": re.compile(r"^[CGD][A-Z0-9_]{2,}$")}


Check = Callable[["Settings"], list[Finding]]


# -- Slack -----------------------------------------------------------------------------------------
def slack_checks(settings: Settings) -> list[Finding]:
    if settings.slack_bot_token is None:
        return [Finding("slack token", "warning", "SLACK_BOT_TOKEN is not set: only `docsbot console` works",
                        "set SLACK_BOT_TOKEN (xoxb-…) from the app's OAuth & Permissions page")]
    found = [_auth(settings)]
    if settings.slack_signing_secret is None:
        found.append(Finding("slack signing secret", "failed", "SLACK_SIGNING_SECRET is not set",
                             "copy the Signing Secret from the app's Basic Information page"))
    else:
        found.append(Finding("slack signing secret", "ok", "set"))
    found.append(_app_token(settings))
    return found


def _auth(settings: Settings) -> Finding:
    from slack_sdk import WebClient
    from slack_sdk.errors import SlackApiError

    quiet = logging.getLogger("commands.doctor.slack")  # the finding says it once; no raw slack_sdk ERROR lines
    quiet.disabled = True
    client = WebClient(token=settings.slack_bot_token.get_secret_value(),  # type: ignore[union-attr]
                       base_url=settings.slack_api_url, timeout=int(TIMEOUT_S), logger=quiet)
    try:
        response = client.auth_test()
    except SlackApiError as exc:
        return Finding("slack auth", "failed", f"auth.test: {exc.response.get('error')}",
                       "SLACK_BOT_TOKEN is wrong or revoked: copy the Bot User OAuth Token (xoxb-…) again, "
                       "reinstalling the app if it was removed")
    except Exception as exc:  # connection refused, DNS, TLS: all mean the same to the operator
        return Finding("slack auth", "failed", f"cannot reach {settings.slack_api_url}: {type(exc).__name__}",
                       "check SLACK_API_URL (leave it unset for Slack itself) and outbound network access")
    granted = {s.strip() for s in (response.headers.get("x-oauth-scopes") or "").split(",") if s.strip()}
    who = f"bot {response.get('user_id')} in team {response.get('team_id')}"
    if not granted:
        return Finding("slack auth", "warning", f"{who}; Slack did not say which scopes the token has",
                       "compare the token's scopes with bot/manifest.json by hand")
    missing = sorted(set(manifest_scopes()) - granted)
    if missing:
        return Finding("slack auth", "failed", f"{who}; missing scopes: {', '.join(missing)}",
                       "add them on the app's OAuth & Permissions page (or update it from bot/manifest.json) "
                       "and reinstall")
    return Finding("slack auth", "ok", f"{who}; every scope in bot/manifest.json granted")


def manifest_scopes() -> list[str]:
    return json.loads(MANIFEST.read_text())["oauth_config"]["scopes"]["bot"]


def _app_token(settings: Settings) -> Finding:
    if settings.slack_app_token is None:
        return Finding("slack mode", "ok", "HTTP: Slack sends events to /slack/events (no SLACK_APP_TOKEN)")
    if settings.slack_app_token.get_secret_value().startswith("xapp-"):
        return Finding("slack mode", "ok", "Socket Mode (SLACK_APP_TOKEN is an app-level token)")
    return Finding("slack mode", "failed", "SLACK_APP_TOKEN does not look like an app-level token (xapp-…)",
                   "create an app-level token with connections:write on the app's Basic Information page")


# -- LLM and embeddings ----------------------------------------------------------------------------
def llm_checks(settings: Settings) -> list[Finding]:
    """The chat provider probes its own endpoint (rag/providers): what it checks is its own business."""
    if not settings.use_llm:
        return [Finding("llm", "ok", "no LLM configured: the embedded extractive answerer is used")]
    from foundation.wiring import llm_config
    from rag import make_provider

    described = make_provider(llm_config(settings)).describe()
    try:
        found = described.probe(TIMEOUT_S)
    except Exception as exc:  # a provider whose probe breaks: a finding, not a traceback
        return [Finding("llm endpoint", "failed", f"the {described.provider} provider could not probe "
                        f"{described.endpoint} for {described.model}: {type(exc).__name__}",
                        "check DOCSBOT_LLM_PROVIDER, OPENAI_BASE_URL and DOCSBOT_CHAT_MODEL")]
    return [Finding(p.check, p.status, p.detail, p.fix) for p in found]


def embedding_check(settings: Settings) -> tuple[Finding, Embedder | None]:
    import openai

    from foundation.wiring import rag_config
    from rag import EmbeddingError, make_embedder

    try:
        embedder = make_embedder(rag_config(settings))
        if settings.embedding_provider == "local":
            return Finding("embeddings", "ok", f"{embedder.name} loaded, weights verified by sha256"), embedder
        dim = embedder.embed(["docsbot doctor"]).shape[1]
    except (EmbeddingError, openai.OpenAIError, OSError) as exc:
        return Finding("embeddings", "failed", str(exc) or type(exc).__name__,
                       "reinstall the project (local model) or check the embeddings endpoint and "
                       "DOCSBOT_EMBEDDING_MODEL / DOCSBOT_EMBEDDING_DIM"), None
    return Finding("embeddings", "ok", f"{embedder.name} answers with dimension {dim}"), embedder


# -- the index -------------------------------------------------------------------------------------
def index_checks(settings: Settings, embedder: Embedder | None) -> list[Finding]:
    from foundation.wiring import index_config
    from rag import StoreError, open_index

    where = "the database of DOCSBOT_INDEX_URL" if settings.index_url else settings.data_dir
    try:
        store = open_index(index_config(settings))
        if not store.exists():
            return [Finding("index", "failed", f"no index at {where}",
                            "run `docsbot index` (a folder) or `docsbot sync` (the docs repository)")]
        if embedder is not None:
            store.check_embedding(embedder.name, embedder.dim)
        counts, meta = store.counts(), store.meta()
        readable = readable_documents(store, member_level(settings))
        linked = store.doc_columns("url", "commit")
    except StoreError as exc:
        return [Finding("index", "failed", str(exc),
                        "rebuild it with the configured model (`docsbot index` / `docsbot sync`), "
                        "or configure the model it was built with")]
    except Exception as exc:  # an unreachable bucket or an unreadable folder
        return [Finding("index", "failed", f"cannot read {where}: {type(exc).__name__}: {exc}",
                        "check DOCSBOT_DATA_DIR (or DOCSBOT_INDEX_URL) and, for a bucket or a database, its "
                        "credentials and network access")]
    found = [Finding("index", "ok" if counts["chunks"] else "failed",
                     f"{counts['documents']} documents, {counts['chunks']} chunks",
                     "" if counts["chunks"] else "index some docs: `docsbot index` or `docsbot sync`")]
    if settings.sources:  # each source's commit, freshness and links are its own (commands/doctor_sources.py)
        return found + ([_readable(settings, readable)] if counts["documents"] else [])
    found.append(_freshness(meta))
    if counts["documents"]:
        found += [_readable(settings, readable), _links(settings, linked)]
    return found


def _readable(settings: Settings, readable: Readable) -> Finding:
    if readable.readable:
        return Finding("readable docs", "ok", readable.line())
    return Finding("readable docs", "warning", readable.line() + ": nobody in Slack gets an answer",
                   readable_fix(settings))


def _links(settings: Settings, docs: dict[str, tuple]) -> Finding:
    """Citation links: a web address configured (or derived) and applied to the index."""
    repo_web, _ = links_of(settings)
    if not repo_web:
        remote = remote_of(settings)
        derived = web_from_remote(remote) if remote else None
        fix = ("set DOCSBOT_REPO_WEB to the repository's web address (and DOCSBOT_LINK_TEMPLATE for a host "
               "other than GitHub)")
        if derived is not None:
            template = "" if derived[1] == "github" else f" DOCSBOT_LINK_TEMPLATE='{derived[1]}'"
            fix = f"set DOCSBOT_REPO_WEB={derived[0]}{template} (from the git remote)"
        return Finding("citation links", "warning", "no repository web address: citations have no links",
                       fix + ", then `docsbot sync` (nothing is re-embedded)")
    committed = [url for url, commit in docs.values() if commit and not commit.endswith("+dirty")]
    if not committed:
        return Finding("citation links", "warning", "no indexed document has a git commit: citations cannot link",
                       "sync the docs from git (DOCSBOT_REPO), or index a folder inside a git work tree")
    stale = sum(not url.startswith(repo_web.rstrip("/")) for url in committed)
    if stale:
        return Finding("citation links", "warning",
                       f"{stale} of {len(committed)} documents are indexed without links to {repo_web}",
                       "run `docsbot sync` (or `docsbot index`) to apply it: "
                       "rows are rewritten, nothing is re-embedded")
    return Finding("citation links", "ok", f"citations link to {repo_web}")


def sample_docs_check(settings: Settings) -> list[Finding]:
    """The bundled sample docs (a fictional company's policies) served to a real workspace."""
    if settings.slack_bot_token is None or settings.repo is not None:
        return []
    if Path(settings.docs_dir).resolve() != SAMPLE_DOCS:
        return []
    return [Finding("docs source", "warning", "Slack is connected, but the docs are the bundled samples (docs-sync/)",
                    "point DOCSBOT_REPO at your docs repository (or DOCSBOT_DOCS_DIR at a folder), "
                    "then `docsbot sync`")]


def _freshness(meta: dict) -> Finding:
    commit, date, last = meta.get("commit"), meta.get("commit_date"), meta.get("last_sync")
    if last and not last.get("ok"):
        return Finding("index freshness", "warning", f"the last sync failed at {last['at']}: {last['error']}",
                       "run `docsbot sync` and fix what it reports")
    if not commit:
        return Finding("index freshness", "ok", "built from a folder (no git commit)")
    age = ""
    if date:
        days = (datetime.now(timezone.utc) - datetime.fromisoformat(date)).total_seconds() / 86400
        age = f", committed {days:.1f} days ago"
    return Finding("index freshness", "ok", f"indexed commit {commit[:12]}{age}")


# -- configuration files and secrets ------------------------------------------------------------------
def access_check(settings: Settings) -> list[Finding]:
    from bot.access import AccessFileError, load_access

    if not settings.access_file:
        return [Finding("access file", "warning", "DOCSBOT_ACCESS_FILE is not set: everyone reads public docs only",
                        "copy bot/access.example.toml, fill in your IDs, and point DOCSBOT_ACCESS_FILE at it")]
    try:
        policy = load_access(settings.access_file)
    except (AccessFileError, OSError) as exc:
        return [Finding("access file", "failed", str(exc), "fix the file (its format is described in bot/access.py)")]
    named = {"users": policy.users, "groups": policy.groups, "channels": policy.channels, "admins": policy.admins}
    odd = [f"{kind}: {key}" for kind, keys in named.items() for key in keys if not _SLACK_ID[kind].match(key)]
    if odd:
        return [Finding("access file", "failed", f"entries that are not Slack IDs: {', '.join(sorted(odd)[:6])}",
                        "use IDs, not names (profile ▸ ⋮ ▸ Copy member ID; channel details ▸ channel ID)")]
    total = sum(len(keys) for keys in named.values())
    return [Finding("access file", "ok", f"{settings.access_file}: {total} IDs, all well-formed")]


def scope_checks(settings: Settings) -> list[Finding]:
    """The channels' scopes (bot/channel_rules.py): one warning per glob that matches no indexed
    document (a typo, or a folder that moved: that channel then answers from nothing, or always
    falls back). Nothing without scopes, a readable access file (access_check says why) or an
    index (index_checks says why)."""
    from bot.access import AccessFileError, load_access
    from foundation.wiring import index_config
    from rag import StoreError, open_index

    if not settings.access_file:
        return []
    try:
        scopes = {channel: rules.scope for channel, rules in load_access(settings.access_file).channel_rules.items()
                  if rules.scope is not None}
        if not scopes:
            return []
        store = open_index(index_config(settings))
        documents = list(store.doc_hashes()) if store.exists() else []
    except (AccessFileError, OSError, StoreError):
        return []
    found = [Finding("channel scope", "warning", f"{channel}: `{glob}` matches no indexed document",
                     "fix the glob: a path relative to the docs root, like runbooks/** or ops/*.md")
             for channel, scope in sorted(scopes.items()) for glob in scope.unmatched(documents)]
    return found or [Finding("channel scope", "ok", f"{len(scopes)} channel scope(s), every glob matches documents")]


def webhook_check(settings: Settings) -> list[Finding]:
    from sync.workcopy import is_local_uri

    if settings.repo is None or is_local_uri(settings.repo.get_secret_value()):
        return []
    if settings.webhook_secret is None:
        return [Finding("git webhook", "warning", "DOCSBOT_REPO is a URL but DOCSBOT_WEBHOOK_SECRET is not set: "
                        "pushes are refused and only scheduled syncs run",
                        "set DOCSBOT_WEBHOOK_SECRET and the same secret on the repository's push webhook")]
    return [Finding("git webhook", "ok", "secret set")]


# Checks run after the built-in ones (e.g. the shared state store's) are appended here.
EXTRA_CHECKS: list[Check] = []


def run_checks(settings: Settings) -> list[Finding]:
    from commands.doctor_files import unindexed_checks
    from commands.doctor_manifest import manifest_checks
    from commands.doctor_site import site_checks
    from commands.doctor_sources import sources_checks

    embedding, embedder = embedding_check(settings)
    # The docs: one repository (or folder), or each source of a sources file.
    docs = (sources_checks(settings) if settings.sources else
            [*unindexed_checks(settings), *site_checks(settings), *sample_docs_check(settings)])
    findings = [*slack_checks(settings), *manifest_checks(settings), *llm_checks(settings), embedding,
                *index_checks(settings, embedder), *docs, *access_check(settings), *scope_checks(settings),
                *webhook_check(settings)]
    for check in EXTRA_CHECKS:
        findings += check(settings)
    return findings


def render(findings: list[Finding]) -> str:
    width = max(len(f.check) for f in findings)
    lines = []
    for f in findings:
        lines.append(f"{f.status.upper():<8} {f.check:<{width}}  {f.detail}")
        if f.fix:
            lines.append(f"{'':<8} {'':<{width}}  fix: {f.fix}")
    failed = sum(f.status == "failed" for f in findings)
    warned = sum(f.status == "warning" for f in findings)
    lines.append(f"\n{len(findings)} checks: {failed} failed, {warned} warnings")
    return "\n".join(lines)


def cmd_doctor(settings: Settings, args: argparse.Namespace) -> int:
    findings = run_checks(settings)
    print(json.dumps([asdict(f) for f in findings], indent=2) if args.json else render(findings))
    return 1 if any(f.status == "failed" for f in findings) else 0


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("doctor", help="check Slack, the LLM, embeddings, the index and the config files")
    p.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(handler=cmd_doctor)
