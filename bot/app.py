"""The Bolt app and its aiohttp web app: `/slack/events`, `/healthz` and the git webhook."""
from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from bot.access import AccessFile, AccessPolicy, tell_admins
from bot.answering import Answerer
from bot.directory import Directory
from bot.limits import AnswerQueue, UserRateLimit
from bot.listeners import register_listeners
from bot.middleware import attach, drop_retries
from bot.docs_sync import status_text
from bot.services import Services, SyncCommand
from bot.ttl import TTLCache
from bot.work import BackgroundWork
from docsbot.settings import Settings
from rag.answer_log import AnswerLog
from rag.engine import Engine

log = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"


@dataclass
class DocsBot:
    app: AsyncApp
    services: Services
    signing_secret: str = field(repr=False)  # never in a repr, so never in a log line
    routes: list[web.RouteDef] = field(default_factory=list)

    @property
    def client(self) -> AsyncWebClient:
        return self.app.client


def web_client(settings: Settings) -> AsyncWebClient:
    """Web API client at `SLACK_API_URL`, retrying connection errors and 429s (after Retry-After)."""
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return AsyncWebClient(
        token=token,
        base_url=settings.slack_api_url,
        timeout=15,
        retry_handlers=[AsyncConnectionErrorRetryHandler(), AsyncRateLimitErrorRetryHandler(max_retry_count=2)],
    )


def build_bot(
    settings: Settings,
    engine: Engine,
    policy: AccessPolicy | None = None,
    run_sync: SyncCommand | None = None,
    routes: list[web.RouteDef] | None = None,
) -> DocsBot:
    """Everything wired together; `routes` are extra aiohttp routes (e.g. the git webhook)."""
    access = AccessFile(settings.access_file) if policy is None else AccessFile.fixed(policy)
    secret = settings.slack_signing_secret.get_secret_value() if settings.slack_signing_secret else ""
    client = web_client(settings)
    app = AsyncApp(client=client, signing_secret=secret, name="docsbot", process_before_response=False)
    directory = Directory(client, access, settings.bot_lookup_ttl_s)
    answer_log = AnswerLog(settings.data_dir, settings.answer_log_days)
    answerer = Answerer(
        client, engine, directory, answer_log,
        UserRateLimit(settings.bot_user_questions_per_minute),
        AnswerQueue(settings.bot_max_concurrent_answers, settings.queue_max, settings.queue_wait_s),
        stream_replies=settings.llm_stream,
    )
    services = Services(
        settings=settings,
        engine=engine,
        access=access,
        answerer=answerer,
        answer_log=answer_log,
        work=BackgroundWork(),
        seen_events=TTLCache(settings.bot_dedupe_ttl_s),
        seen_messages=TTLCache(settings.bot_dedupe_ttl_s),
        status=lambda: asyncio.to_thread(status_text, engine.store),
        run_sync=run_sync,
    )
    access.on_invalid = lambda previous, problem: services.work.spawn(
        tell_admins(client, previous.admins, problem), name="access-file-invalid")
    app.use(attach(services))
    app.use(drop_retries(services))
    register_listeners(app)
    return DocsBot(app, services, secret, list(routes or []))


def web_app(bot: DocsBot) -> web.Application:
    web_application = web.Application(client_max_size=1024**2)
    web_application.add_routes([
        web.post(EVENTS_PATH, _events_handler(bot)),
        web.get("/healthz", _healthz(bot)),
        *bot.routes,
    ])
    return web_application


def _events_handler(bot: DocsBot) -> Any:
    verifier = SignatureVerifier(bot.signing_secret)

    async def slack_events(request: web.Request) -> web.Response:
        """Bolt's own handler, with a guard: a body Bolt cannot parse is a 400 (a 401 when the
        signature is bad too), never a 500 with a traceback."""
        raw = await request.text()
        try:
            bolt_request = AsyncBoltRequest(body=raw, query=request.query_string, headers=dict(request.headers))
            parsed = isinstance(bolt_request.body, dict)
        except (ValueError, TypeError, AttributeError):
            parsed = False
        if not parsed:
            if not verifier.is_valid_request(raw, dict(request.headers)):
                return web.json_response({"error": "invalid signature"}, status=401)
            return web.json_response({"error": "malformed request body"}, status=400)
        response = await bot.app.async_dispatch(bolt_request)
        return await to_aiohttp_response(response)

    return slack_events


def _healthz(bot: DocsBot) -> Any:
    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "answers_in_progress": bot.services.work.pending})

    return healthz
