"""The fuzz targets that go over HTTP: the real Slack endpoint and the git webhook (see eval/fuzz.py)."""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from hypothesis import strategies as st
from pydantic import SecretStr

from bot.local import demo
from bot.app import EVENTS_PATH
from bot.local.harness import LocalSlack, local_slack
from foundation.settings import Settings
from foundation.wiring import open_engine, sync_config
from eval.fuzzing import Outcome, run_property
from rag import ExtractiveAnswerer
from sync.webhook import webhook_route


# -- the Slack endpoint ----------------------------------------------------------------------------
_SLACK_KEYS = ["type", "event", "team_id", "api_app_id", "token", "challenge", "event_id", "authorizations", "user",
               "channel", "text", "ts", "thread_ts", "command", "user_id", "channel_id", "trigger_id", "actions",
               "view", "container", "message", "team", "enterprise", "payload", "callback_id", "state",
               "private_metadata", "bot_id", "subtype", "reaction", "item", "channel_type", "action_id", "value"]
_SLACK_WORDS = ["event_callback", "url_verification", "ssl_check", "block_actions", "view_submission", "view_closed",
                "shortcut", "message_action", "app_mention", "message", "reaction_added", "reaction_removed",
                "app_home_opened", "im", "/docs", "feedback_down", "feedback_up", "answer_in_dm", "docs_ask",
                "feedback_form", "-1", demo.BOB, demo.ALICE, demo.GENERAL, "help", "status", "sync", "feedback"]
_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20),
                     st.sampled_from(_SLACK_WORDS))
JSON_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_SLACK_KEYS) | st.text(max_size=8),
                                                                inner, max_size=6),
    max_leaves=16,
)
SLACK_OBJECTS = st.dictionaries(st.sampled_from(_SLACK_KEYS), JSON_VALUES, max_size=8)
SIGNING = st.sampled_from(["signed", "unsigned", "wrong secret", "stale", "garbage"])


@dataclass(frozen=True)
class SlackCase:
    kind: str
    body: bytes
    content_type: str
    signing: str
    garbage: tuple[str, str] = ("", "")


def slack_cases(local: LocalSlack) -> st.SearchStrategy[SlackCase]:
    slack = local.slack
    bodies = st.one_of(
        st.tuples(st.just("event"), SLACK_OBJECTS.map(lambda event: slack.event_body(event).encode())),
        st.tuples(st.just("command"), st.tuples(st.sampled_from(_SLACK_WORDS) | st.text(max_size=10),
                                                st.sampled_from(_SLACK_WORDS) | st.text(max_size=10),
                                                st.text(max_size=60)).map(
            lambda t: slack.command_body(*t).encode())),
        st.tuples(st.just("interaction"), SLACK_OBJECTS.map(
            lambda payload: urlencode({"payload": json.dumps(payload)}).encode())),
        st.tuples(st.just("json"), JSON_VALUES.map(lambda value: json.dumps(value).encode())),
        st.tuples(st.just("raw"), st.binary(max_size=300)),
    )
    header_text = st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80)
    return st.builds(
        lambda body, content_type, signing, garbage: SlackCase(body[0], body[1], content_type, signing, garbage),
        bodies, st.sampled_from(["application/json", "application/x-www-form-urlencoded", "text/plain"]),
        SIGNING, st.tuples(header_text, header_text),
    )


def _sign(secret: str, timestamp: str, body: bytes) -> str:
    return "v0=" + hmac.new(secret.encode(), b"v0:" + timestamp.encode() + b":" + body, hashlib.sha256).hexdigest()


def _slack_headers(case: SlackCase) -> dict[str, str]:
    now = str(int(time.time()))
    headers = {"Content-Type": case.content_type}
    if case.signing == "signed":
        headers |= {"X-Slack-Request-Timestamp": now, "X-Slack-Signature": _sign(demo.SIGNING_SECRET, now, case.body)}
    elif case.signing == "wrong secret":
        headers |= {"X-Slack-Request-Timestamp": now, "X-Slack-Signature": _sign("not-the-secret", now, case.body)}
    elif case.signing == "stale":
        old = str(int(time.time()) - 3600)
        headers |= {"X-Slack-Request-Timestamp": old, "X-Slack-Signature": _sign(demo.SIGNING_SECRET, old, case.body)}
    elif case.signing == "garbage":
        headers |= {"X-Slack-Request-Timestamp": case.garbage[0], "X-Slack-Signature": case.garbage[1]}
    return headers


class _Errors(logging.Handler):
    """ERROR records of the HTTP layer (ours, Bolt's, aiohttp's) and of background answers."""

    HTTP = ("bot.app", "slack_bolt", "aiohttp")

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.http: list[str] = []
        self.background: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        (self.http if record.name.startswith(self.HTTP) else self.background).append(
            f"{record.name}: {record.getMessage()}")


@contextmanager
def _errors_logged() -> Iterator[_Errors]:
    handler = _Errors()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def fuzz_slack(examples: int, settings: Settings) -> Outcome:
    """The real app on a local port behind the Slack stand-in; one event loop for every example."""
    outcome = Outcome("slack endpoint")
    loop = asyncio.new_event_loop()
    engine = open_engine(settings, generator=ExtractiveAnswerer())
    context = local_slack(settings, engine)
    local = loop.run_until_complete(context.__aenter__())
    session = loop.run_until_complete(_session())
    url = local.base_url + EVENTS_PATH

    async def deliver(case: SlackCase) -> None:
        calls = len(local.standin.calls)
        async with session.post(url, data=case.body, headers=_slack_headers(case)) as response:
            await response.read()
            status = response.status
        await local.settle()
        assert status < 500, f"HTTP {status} for {case}"
        if case.signing != "signed":
            assert status == 401, f"HTTP {status} for an unsigned request {case}"
            assert len(local.standin.calls) == calls, f"Web API called for an unsigned request {case}"
        assert not errors.http, f"ERROR logged: {errors.http[:3]} for {case}"

    def check(case: SlackCase) -> None:
        key = f"{case.signing} {case.kind}" if case.signing == "signed" else case.signing
        outcome.counts[key] = outcome.counts.get(key, 0) + 1
        loop.run_until_complete(deliver(case))

    quiet = logging.getLogger()
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # WARNING lines for each refused request are expected
    try:
        with _errors_logged() as errors:
            run_property(outcome, examples, slack_cases(local), check)
            if errors.background:
                outcome.counts["errors in background answers"] = len(errors.background)
    finally:
        quiet.setLevel(level)
        loop.run_until_complete(session.close())
        loop.run_until_complete(context.__aexit__(None, None, None))
        loop.close()
    return outcome


async def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))


# -- the git webhook -------------------------------------------------------------------------------
WEBHOOK_SECRET = "fuzz-webhook-secret"


@dataclass(frozen=True)
class HookCase:
    body: bytes
    signing: str  # "github", "gitlab", "bad github", "bad gitlab", "none"
    forged: str
    event: str


HOOK_CASES = st.builds(
    HookCase,
    st.one_of(st.binary(max_size=300), JSON_VALUES.map(lambda v: json.dumps(v).encode()),
              st.dictionaries(st.sampled_from(["ref", "after", "repository"]), JSON_VALUES, max_size=3).map(
                  lambda v: json.dumps(v).encode())),
    st.sampled_from(["github", "gitlab", "bad github", "bad gitlab", "none"]),
    st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=80),
    st.sampled_from(["push", "ping", "", "Push Hook"]),
)


def _hook_headers(case: HookCase) -> dict[str, str]:
    headers = {"X-GitHub-Event": case.event} if case.event else {}
    if case.signing == "github":
        digest = hmac.new(WEBHOOK_SECRET.encode(), case.body, hashlib.sha256).hexdigest()
        headers["X-Hub-Signature-256"] = "sha256=" + digest
    elif case.signing == "gitlab":
        headers["X-Gitlab-Token"] = WEBHOOK_SECRET
    elif case.signing == "bad github":
        headers["X-Hub-Signature-256"] = case.forged
    elif case.signing == "bad gitlab":
        headers["X-Gitlab-Token"] = case.forged
    return headers


def fuzz_webhook(examples: int, settings: Settings) -> Outcome:
    outcome = Outcome("webhook")
    loop = asyncio.new_event_loop()
    triggered: list[int] = []

    async def trigger() -> None:
        triggered.append(1)

    async def start() -> tuple[web.AppRunner, aiohttp.ClientSession, str]:
        app = web.Application()
        hook_settings = settings.model_copy(update={"webhook_secret": SecretStr(WEBHOOK_SECRET), "branch": "main"})
        app.add_routes([webhook_route(sync_config(hook_settings), trigger)])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return runner, await _session(), f"http://127.0.0.1:{port}/hooks/git"

    runner, session, url = loop.run_until_complete(start())

    async def deliver(case: HookCase) -> None:
        before = len(triggered)
        async with session.post(url, data=case.body, headers=_hook_headers(case)) as response:
            status = response.status
        await asyncio.sleep(0)  # let a started sync task run
        assert status < 500, f"HTTP {status} for {case}"
        if case.signing in ("github", "gitlab"):
            assert status in (200, 202), f"HTTP {status} for a signed hook {case}"
        else:
            assert status == 401 and len(triggered) == before, f"unsigned hook accepted: {case}"

    def check(case: HookCase) -> None:
        outcome.counts[case.signing] = outcome.counts.get(case.signing, 0) + 1
        loop.run_until_complete(deliver(case))

    try:
        with _errors_logged() as errors:
            run_property(outcome, examples, HOOK_CASES, check)
            if errors.http:
                outcome.failures += 1
                outcome.first_failure = outcome.first_failure or f"ERROR logged: {errors.http[0]}"
    finally:
        loop.run_until_complete(session.close())
        loop.run_until_complete(runner.cleanup())
        loop.close()
    return outcome
