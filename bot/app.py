"""The Bolt app and its aiohttp web app: `/slack/events`, health and metrics (bot.health) and the git webhook."""
from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request import payload_utils
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.http_retry.builtin_async_handlers import AsyncConnectionErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot.access import AccessFile, AccessPolicy, tell_admins
from bot.answering import Answerer
from bot.unfurls import Unfurler
from bot.directory import Directory
from bot.http_guard import ConnectionGuard
from bot.health import Readiness, health_routes, refuse_while_stopping, standard_checks
from bot.queue import AnswerQueue
from bot.listeners import register_listeners
from bot.middleware import attach, drop_malformed, drop_retries
from bot.ratelimits import CappedRateLimitRetry
from bot.recovery import LEASE_S, Recovery, owner_id
from bot.docs_sync import status_text
from bot.services import Services, SyncCommand
from bot.telemetry import ObservedWebClient, request_kind, slack_request
from bot.work import BackgroundWork
from foundation.settings import Settings
from rag import Engine, bulk_threads
from state.agent_views import AgentViews
from state.answers import AnswerLog
from state.threads import ThreadRecord
from state.audience import AudienceChanges
from state.db import StateDB
from state.dedupe import Dedupe
from state.file_watch import FileWatch
from state.placeholders import PlaceholderJournal
from state.ratelimit import RateLimit
from state.tokens import McpTokens

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


@dataclass
class DocsBot:
    app: AsyncApp
    services: Services
    signing_secret: str = field(repr=False)  # never in a repr, so never in a log line
    routes: list[web.RouteDef] = field(default_factory=list)
    readiness: Readiness = field(default_factory=Readiness)

    @property
    def client(self) -> AsyncWebClient:
        return self.app.client


def web_client(settings: Settings) -> AsyncWebClient:
    """Web API client at `SLACK_API_URL`, retrying connection errors and 429s after Retry-After, but
    never a Retry-After over a minute, nor the answers' calls, which wait their turn (bot.ratelimits)."""
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return ObservedWebClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=15,
        retry_handlers=[AsyncConnectionErrorRetryHandler(), CappedRateLimitRetry(max_retry_count=2)],
    )


def build_bot(
    settings: Settings,
    engine: Engine,
    state: StateDB,
    policy: AccessPolicy | None = None,
    run_sync: SyncCommand | None = None,
    routes: list[web.RouteDef] | None = None,
) -> DocsBot:
    """Everything wired together; `state` is the process's open state database (answers,
    feedback, dedupe, rate limits); `routes` are extra aiohttp routes (e.g. the git webhook)."""
    # From here this process answers questions: a sync it runs leaves a core to query embedding.
    engine.embedder.threads = bulk_threads(settings.embedding_threads, serving=True)
    access = AccessFile(settings.access_file) if policy is None else AccessFile.fixed(policy)
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    client = web_client(settings)
    # The signature is checked once, by `signed_by_slack` on the raw bytes, before Bolt sees them.
    app = AsyncApp(client=client, name="docsbot", process_before_response=False, request_verification_enabled=False)
    directory = Directory(client, access, settings.bot_lookup_ttl_s, settings.audience_fresh_s, AudienceChanges(state))
    answer_log = AnswerLog(state, settings.answer_log_days)
    journal = PlaceholderJournal(state, owner_id(), LEASE_S)
    answerer = Answerer(
        client, engine, directory, answer_log,
        RateLimit(state, settings.bot_user_questions_per_minute),
        AnswerQueue(settings.bot_max_concurrent_answers, settings.queue_max, settings.queue_wait_s),
        stream_replies=settings.llm_stream,
        journal=journal,
        threads=ThreadRecord(state, settings.answer_log_days),
    )
    services = Services(
        settings=settings,
        engine=engine,
        access=access,
        answerer=answerer,
        answer_log=answer_log,
        work=BackgroundWork(),
        dedupe=Dedupe(state),
        status=lambda details: status_text(engine.store, state, details),
        tokens=McpTokens(state, settings.mcp_token_days),
        unfurler=Unfurler(engine, settings.review_days),
        agent_views=AgentViews(state),
        run_sync=run_sync,
        recovery=Recovery(client, journal),
        state_file=FileWatch.of(state),
    )
    access.on_invalid = lambda previous, problem: services.work.spawn(
        tell_admins(client, previous.admins, problem), name="access-file-invalid")
    app.use(attach(services))
    app.use(drop_malformed)
    app.use(drop_retries(services))
    register_listeners(app)
    return DocsBot(app, services, secret, list(routes or []), Readiness(standard_checks(services)))


def web_app(bot: DocsBot, guard: ConnectionGuard | None = None) -> web.Application:
    """`guard`: the server's connection guard (bot.http_guard), whose middleware bounds the body."""
    middlewares = [refuse_while_stopping(bot.readiness, EVENTS_PATH)]
    web_application = web.Application(client_max_size=1024**2,
                                      middlewares=([guard.middleware()] if guard else []) + middlewares)
    web_application.add_routes([
        web.post(EVENTS_PATH, _events_handler(bot)),
        *health_routes(bot.services, bot.readiness),
        *bot.routes,
    ])
    return web_application


SIGNATURE_MAX_AGE_S = 300  # Slack's replay window


def signed_by_slack(secret: str, raw: bytes, headers: Mapping[str, str], now: float) -> bool:
    """Slack's `v0` signature of the raw bytes, at most five minutes old. Nothing of the request
    is decoded or parsed before this passes; no secret configured refuses everything."""
    timestamp = headers.get("X-Slack-Request-Timestamp", "")
    signature = headers.get("X-Slack-Signature", "")
    if not secret or not (0 < len(timestamp) <= 12 and timestamp.isascii() and timestamp.isdigit()):
        return False
    if abs(now - int(timestamp)) > SIGNATURE_MAX_AGE_S:
        return False
    digest = hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(f"v0={digest}".encode(), signature.encode("utf-8", "replace"))


_BOLT_READERS = [f for name, f in vars(payload_utils).items()
                 if name.startswith(("to_", "is_")) and getattr(f, "__module__", "") == payload_utils.__name__]


# Fields Bolt reads as objects (`body.get("view", {}).get(...)`) wherever they appear.
_OBJECTS = ("event", "view", "container", "message", "function", "tokens")


def _objects_where_expected(value: dict[str, Any]) -> bool:
    return all(isinstance(value.get(key, {}), dict) for key in _OBJECTS) and all(
        _objects_where_expected(value[key]) for key in _OBJECTS if key in value)


MAX_NESTING = 64  # lists and objects inside each other; Slack's deepest payloads (rich text) nest ~12


def _nested_within(value: object, limit: int) -> bool:
    """Whether `value` holds no list or object more than `limit` levels deep (walked without
    recursion: a deeply nested payload must not exhaust the stack of what reads it)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in children)
    return True


def readable_by_bolt(body: object) -> bool:
    """Whether Bolt can take the request apart: a JSON object nested at most MAX_NESTING deep
    whose `event`, `view`... (if any) are objects, whose `actions` are objects, and that all of
    Bolt's own payload readers accept. Bolt indexes into these without checks (a 500 and a
    traceback otherwise)."""
    if not isinstance(body, dict) or not _nested_within(body, MAX_NESTING) or not _objects_where_expected(body):
        return False
    actions = body.get("actions", [])
    if not isinstance(actions, list) or not all(isinstance(action, dict) for action in actions):
        return False
    try:
        for read in _BOLT_READERS:
            read(body)
    except (AttributeError, KeyError, IndexError, TypeError, ValueError):
        return False
    return True


def _events_handler(bot: DocsBot) -> Any:
    async def slack_events(request: web.Request) -> web.Response:
        """Bolt's own handler behind two guards: the signature is checked on the raw bytes first
        (401), and a signed body that is not UTF-8 or that Bolt cannot read is a 400; bad input
        is one WARNING line, never a 500 with a traceback."""
        raw = await request.read()
        if not signed_by_slack(bot.signing_secret, raw, request.headers, time.time()):
            log.warning("Slack request from %s refused: bad, stale or missing signature", request.remote)
            return web.json_response({"error": "invalid signature"}, status=401)
        try:
            bolt_request = AsyncBoltRequest(body=raw.decode("utf-8"), query=request.query_string,
                                            headers=dict(request.headers))
            readable = readable_by_bolt(bolt_request.body)
        except (ValueError, TypeError, AttributeError, KeyError, IndexError, RecursionError):
            readable = False  # RecursionError: JSON nested too deep for the parser itself
        if not readable:
            log.warning("signed Slack request whose body is not a Slack payload (%d bytes): refused", len(raw))
            return web.json_response({"error": "malformed request body"}, status=400)
        with slack_request(request_kind(bolt_request.body)):
            response = await bot.app.async_dispatch(bolt_request)
        return await to_aiohttp_response(response)

    return slack_events
