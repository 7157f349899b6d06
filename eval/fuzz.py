"""`python -m eval fuzz`: property-based fuzzing (hypothesis) of everything that reads outside input.

Targets and their properties:
- documents: any bytes through the front-matter parser and the chunker raise nothing but a skip
  reason (DocumentError); every non-blank character of each section lands in some chunk, in
  order; chunk ids are unique and the same on a second run.
- access files: any text (TOML-like or not) loads as a policy or fails with AccessFileError.
- mrkdwn: doc text (answer, titles, sections, versions) rendered into an answer message carries no
  `<...>` construct except the citations' own http(s) links: no mention, broadcast or foreign link.
- Slack endpoint: random JSON, form and raw bodies, signed, unsigned, badly or stale signed, to the
  real aiohttp app: only 2xx/4xx, a 401 and no Web API call for every request not signed with the
  secret, and no ERROR log line from the HTTP layer.
- webhook: random bodies and signatures: a sync starts only for a valid signature; 2xx/4xx only.

The test suite runs each target with a few hundred examples (tests/test_fuzz.py); this command runs
thousands and prints how many inputs each target tried and how many failed.
"""
from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import json
import logging
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import aiohttp
from aiohttp import web
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st
from pydantic import SecretStr

from bot.local import demo
from bot.access import AccessFileError, load_access
from bot.app import EVENTS_PATH
from bot.blocks import answer_message
from bot.local.harness import LocalSlack, local_slack
from docsbot.settings import Settings
from docsbot.wiring import open_engine, sync_config
from rag import (
    AccessRules, Answer, Citation, Diagnostics, DocumentError, ExtractiveAnswerer, chunk_document,
    parse_document, sections,
)
from sync.webhook import webhook_route


@dataclass
class Outcome:
    target: str
    tried: int = 0
    failures: int = 0
    seconds: float = 0.0
    counts: dict[str, int] = field(default_factory=dict)  # what kinds of input were tried
    first_failure: str = ""

    def line(self) -> str:
        kinds = ", ".join(f"{k} {v:,}" for k, v in sorted(self.counts.items()))
        return (f"{self.target:<15} {self.tried:>7,} inputs  {self.failures} failures  {self.seconds:6.1f}s"
                + (f"  ({kinds})" if kinds else "")
                + (f"\n    first failure: {self.first_failure}" if self.failures else ""))


def _run(outcome: Outcome, examples: int, strategy: st.SearchStrategy, check: Callable[[Any], None]) -> Outcome:
    """Run `check` on `examples` generated inputs; a falsified property is one failure (hypothesis
    stops at the first and shrinks it to the smallest input that still fails)."""
    @hsettings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def property_holds(value: Any) -> None:
        outcome.tried += 1
        check(value)

    started = time.perf_counter()
    try:
        property_holds()
    except Exception as exc:  # noqa: BLE001 - the falsified property, reported with its input
        found = exc.exceptions if isinstance(exc, ExceptionGroup) else [exc]
        outcome.failures += len(found)
        outcome.first_failure = "\n    ".join(f"{type(e).__name__}: {e}"[:1500] for e in found)
    outcome.seconds = time.perf_counter() - started
    return outcome


# -- documents ---------------------------------------------------------------------------------------
_LINES = st.one_of(
    st.text(max_size=80),
    st.sampled_from(["---", "...", "# Title", "## Section", "## Section", "## ???", "# !", "### ", "#", "```", "~~~",
                     "```python", "| a | b |", "|---|---|", "- item", "1. step", "", "   ", "title: T", "access: team",
                     "access: [x]", "version: 2.3", "title: {a: 1}", ": :", "? x", "&a *a",
                     "!!python/object:os.system x"]),
    st.builds(lambda w, n: " ".join([w] * n), st.text(min_size=1, max_size=12), st.integers(1, 200)),
)
_DOC_TEXT = st.lists(_LINES, max_size=40).map("\n".join)
DOC_BYTES = st.one_of(
    st.binary(max_size=2000),
    _DOC_TEXT.map(str.encode),
    st.tuples(st.sampled_from([b"", b"\xef\xbb\xbf"]), _DOC_TEXT, st.sampled_from(["\n", "\r\n", "\r"])).map(
        lambda t: t[0] + t[1].replace("\n", t[2]).encode("utf-8", "surrogatepass")),
)
CHUNKING = st.integers(50, 1500).flatmap(lambda size: st.tuples(st.just(size), st.integers(0, size - 1)))
_SPACE = re.compile(r"\s+")


def check_document(case: tuple[bytes, tuple[int, int]]) -> str:
    raw, (size, overlap) = case
    try:
        doc = parse_document("fuzz/doc.md", raw, AccessRules({}), 1_000_000)
    except DocumentError:
        return "skipped"
    chunks = chunk_document(doc, size, overlap)
    ids = [c.chunk_id for c in chunks]
    assert len(set(ids)) == len(ids), f"duplicate chunk ids {ids}"
    assert [c.chunk_id for c in chunk_document(doc, size, overlap)] == ids, "chunk ids changed on a second run"
    # Every non-blank character of every section, in order, is in the section's chunks (overlap
    # repeats some, which a subsequence allows).
    for section in sections(doc):
        wanted = _SPACE.sub("", "\n".join(section.lines))
        got = _SPACE.sub("", "".join(c.text for c in chunks if c.anchor == section.anchor
                                     and c.section == " › ".join(section.headings)))
        assert _subsequence(wanted, got), f"section {section.anchor!r} lost text: {wanted[:200]!r}"
    return "parsed"


def _subsequence(wanted: str, text: str) -> bool:
    it = iter(text)
    return all(char in it for char in wanted)


def fuzz_documents(examples: int) -> Outcome:
    outcome = Outcome("documents")

    def check(case: tuple[bytes, tuple[int, int]]) -> None:
        kind = check_document(case)
        outcome.counts[kind] = outcome.counts.get(kind, 0) + 1

    return _run(outcome, examples, st.tuples(DOC_BYTES, CHUNKING), check)


# -- access files ------------------------------------------------------------------------------------
_TOML_LINES = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["[admins]", "admins = [\"U1\"]", "admins = \"U1\"", "admins = [1, 2]", "[defaults]",
                     "member = \"team\"", "public_channel = 3", "[users]", "U1 = \"restricted\"", "U2 = \"secret\"",
                     "U3 = 7", "U4 = [\"team\"]", "U5 = {a = 1}", "[groups]", "[domains]", "\"Acme.COM\" = \"team\"",
                     "[channels]", "C1 = \"public\"", "[[users]]", "[other]", "x = 1979-05-27", "y = true"]),
)
ACCESS_TEXT = st.one_of(st.lists(_TOML_LINES, max_size=20).map("\n".join), st.binary(max_size=300))


def fuzz_access_files(examples: int) -> Outcome:
    outcome = Outcome("access files")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "access.toml"

        def check(content: str | bytes) -> None:
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
            try:
                load_access(path)
                kind = "loaded"
            except AccessFileError:
                kind = "refused"
            outcome.counts[kind] = outcome.counts.get(kind, 0) + 1

        return _run(outcome, examples, ACCESS_TEXT, check)


# -- mrkdwn --------------------------------------------------------------------------------------------
_HOSTILE = st.one_of(st.text(max_size=60), st.sampled_from(
    ["<!channel>", "<!here|here>", "<@U_ALICE>", "<#C123|general>", "<https://evil.example|click>", "<mailto:a@b>",
     "&lt;!channel&gt;", "<", ">", "|", "**bold**", "<<!everyone>>", "&", "<!subteam^S1>", "`<@U1>`"]))
DOC_STRINGS = st.lists(_HOSTILE, max_size=6).map("".join)
_URLS = st.one_of(st.just(""), st.builds(lambda path: f"https://git.example.com/docs/blob/abc/{path}", DOC_STRINGS))
CITATIONS = st.builds(
    Citation, n=st.integers(1, 12), doc_path=DOC_STRINGS, title=DOC_STRINGS, section=DOC_STRINGS,
    version=DOC_STRINGS, commit=DOC_STRINGS, commit_date=DOC_STRINGS, url=_URLS, score=st.just(0.5),
)
ANSWERS = st.builds(
    lambda text, answered, citations: Answer("q", text, answered, None if answered else "no_match", citations,
                                             Diagnostics(), "public"),
    DOC_STRINGS, st.booleans(), st.lists(CITATIONS, max_size=4),
)
_CONSTRUCT = re.compile(r"<([^>]*)>?")
_OUR_LINK = re.compile(r"https?://[^\s<>|]+\|[^<>]*")


def _texts(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "text" and isinstance(item, str):
                yield item
            else:
                yield from _texts(item)
    elif isinstance(value, list):
        for item in value:
            yield from _texts(item)


def check_mrkdwn(answer: Answer) -> None:
    for text in _texts(answer_message(answer, "A1")):
        for construct in _CONSTRUCT.findall(text):
            assert _OUR_LINK.fullmatch(construct), f"<{construct}> survives in {text!r}"


def fuzz_mrkdwn(examples: int) -> Outcome:
    return _run(Outcome("mrkdwn"), examples, ANSWERS, check_mrkdwn)


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
            _run(outcome, examples, slack_cases(local), check)
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
            _run(outcome, examples, HOOK_CASES, check)
            if errors.http:
                outcome.failures += 1
                outcome.first_failure = outcome.first_failure or f"ERROR logged: {errors.http[0]}"
    finally:
        loop.run_until_complete(session.close())
        loop.run_until_complete(runner.cleanup())
        loop.close()
    return outcome


# -- the command ---------------------------------------------------------------------------------------
def targets(examples: int, slack_examples: int, settings: Settings) -> list[Callable[[], Outcome]]:
    return [
        lambda: fuzz_documents(examples),
        lambda: fuzz_access_files(examples),
        lambda: fuzz_mrkdwn(examples),
        lambda: fuzz_slack(slack_examples, settings),
        lambda: fuzz_webhook(examples, settings),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval fuzz", description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per target (default 10,000)")
    parser.add_argument("--slack-examples", type=int, help="inputs for the Slack endpoint (default: --examples)")
    args = parser.parse_args((argv or [])[1:])
    logging.basicConfig(level=logging.ERROR)
    started = time.perf_counter()
    outcomes = []
    with tempfile.TemporaryDirectory(prefix="docsbot-fuzz-") as data_dir:
        settings = Settings(_env_file=None, data_dir=data_dir)
        for target in targets(args.examples, args.slack_examples or args.examples, settings):
            outcomes.append(target())
            print(outcomes[-1].line(), flush=True)
    failures = sum(o.failures for o in outcomes)
    print(f"total: {sum(o.tried for o in outcomes):,} inputs, {failures} failures "
          f"in {time.perf_counter() - started:.0f}s")
    return 1 if failures else 0
