"""A chat provider that is not OpenAI-compatible, registered from outside `rag`: the engine answers
through it, the follow-up rewriter rewrites through it, its failures go through the same retries,
deadline and metrics as OpenAI's, and `docsbot doctor` shows its own probe. It speaks a
Messages-style wire format (system prompt apart, text in content blocks) to a local server."""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from pydantic import ValidationError

from commands.doctor import llm_checks
from commands.doctor_finding import Finding
from foundation.wiring import rag_config
from eval.standins.threaded import ThreadedServer
from rag import (
    Description, Engine, Failure, Level, LLMConfig, MalformedReply, ProbeFinding, ProviderError, make_generator,
    register_provider,
)
from rag.followup import REWRITE_PROMPT
from rag.prompt import Source
from tests.support.events import Recorded, recording
from tests.support.settings import make_settings

HISTORY = [("user", "How do I set up the VPN on macOS?"), ("agent", "Use Self Service [1].")]
SOURCES = [Source(1, "Deploy Policy", "Deploy windows", "No deploys on Fridays.")]


class MessagesStandIn(ThreadedServer):
    """POST /v1/messages: {"system", "messages", "max_tokens"} → {"content": [{"type": "text", "text"}]},
    or the next of `failures`: (status, headers)."""

    def __init__(self) -> None:
        super().__init__()
        self.requests: list[dict] = []
        self.failures: list[tuple[int, dict[str, str]]] = []
        self.reply = "Install wireguard with apt-get [1]."

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)

    async def _messages(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        if self.failures:
            status, headers = self.failures.pop(0)
            return web.json_response({"type": "error"}, status=status, headers=headers)
        text = "How do I set up the VPN on Linux?" if body["system"] == REWRITE_PROMPT else self.reply
        return web.json_response({"content": [{"type": "text", "text": text}]})


class StatusError(Exception):
    def __init__(self, status: int, retry_after: str | None) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.retry_after = float(retry_after) if retry_after else None


@dataclass
class MessagesProvider:
    """The whole provider: a wire format, a client, and what its failures mean."""

    config: LLMConfig
    session: aiohttp.ClientSession | None = field(default=None)

    @property
    def model(self) -> str:
        return self.config.chat_model

    async def generate(self, messages: list[dict[str, str]], max_tokens: int, timeout: float) -> str:
        body = {"model": self.model, "max_tokens": max_tokens,
                "system": "\n".join(m["content"] for m in messages if m["role"] == "system"),
                "messages": [m for m in messages if m["role"] != "system"]}
        self.session = self.session or aiohttp.ClientSession()
        async with self.session.post(f"{self.config.base_url}/messages", json=body,
                                     timeout=aiohttp.ClientTimeout(total=timeout)) as response:
            if response.status != 200:
                raise StatusError(response.status, response.headers.get("retry-after"))
            blocks = (await response.json()).get("content")
        if not isinstance(blocks, list) or not blocks:
            raise MalformedReply("no content blocks")
        return "".join(block.get("text", "") for block in blocks)

    async def stream(self, messages: list[dict[str, str]], max_tokens: int, timeout: float, emit: object) -> str:
        return await self.generate(messages, max_tokens, timeout)  # this API does not stream

    def classify(self, exc: BaseException) -> Failure | None:
        if isinstance(exc, StatusError):
            transient = exc.status in (429, 529) or exc.status >= 500
            return Failure("transient" if transient else "refused", str(exc), exc.status, exc.retry_after)
        if isinstance(exc, aiohttp.ClientError):
            return Failure("transient", "connection failed")
        return None

    def describe(self) -> Description:
        def probe(timeout_s: float) -> list[ProbeFinding]:
            return [ProbeFinding("llm endpoint", "ok", f"{self.config.base_url} serves {self.model}")]

        return Description("messages", str(self.config.base_url), self.model, probe)

    async def aclose(self) -> None:
        if self.session is not None:
            await self.session.close()
            self.session = None


@pytest.fixture
def messages_api() -> Iterator[MessagesStandIn]:
    register_provider("messages", MessagesProvider)
    server = MessagesStandIn().start()
    yield server
    server.stop()


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    with recording() as recorder:
        yield recorder


def engine_on(sample_engine: Engine, server: MessagesStandIn, **overrides: object) -> Engine:
    config = rag_config(make_settings(Path(sample_engine.config.index.data_dir), llm_provider="messages",
                                      openai_base_url=server.base_url, **overrides))
    return Engine(config, sample_engine.store, sample_engine.embedder, make_generator(config.llm))


async def test_the_engine_and_the_rewriter_use_the_registered_provider(
    sample_engine: Engine, messages_api: MessagesStandIn
) -> None:
    engine = engine_on(sample_engine, messages_api)
    try:
        answer = await engine.ask("and on Linux?", Level.public, HISTORY)
    finally:
        await engine.aclose()
    assert answer.answered and answer.citations[0].doc_path == "onboarding/vpn-setup.md"
    assert "apt-get" in answer.answer and answer.model == "gpt-4o-mini"
    rewrite, answered = messages_api.requests
    assert rewrite["system"] == REWRITE_PROMPT and rewrite["max_tokens"] == 80
    assert "and on Linux?" in rewrite["messages"][-1]["content"]
    assert answered["system"] != REWRITE_PROMPT and "and on Linux?" in answered["messages"][-1]["content"]


async def test_a_failed_rewrite_falls_back_to_the_heuristic(
    sample_engine: Engine, messages_api: MessagesStandIn
) -> None:
    messages_api.failures = [(503, {})]
    engine = engine_on(sample_engine, messages_api)
    try:
        query = await engine.search_query("and on Linux?", HISTORY)
    finally:
        await engine.aclose()
    assert query == "How do I set up the VPN on macOS?\nand on Linux?"


async def test_its_failures_are_retried_by_the_same_logic(
    tmp_path: Path, messages_api: MessagesStandIn, recorded: Recorded
) -> None:
    messages_api.failures = [(529, {"retry-after": "0"}), (429, {"retry-after": "0"})]
    config = rag_config(make_settings(tmp_path, llm_provider="messages", openai_base_url=messages_api.base_url))
    generator = make_generator(config.llm)
    assert await generator.generate("q", SOURCES, []) == messages_api.reply
    assert (recorded.attempts, recorded.failed, recorded.retried) == (3, ["5xx", "429"], ["5xx", "429"])

    messages_api.failures = [(400, {})]
    with pytest.raises(ProviderError, match=r"refused the request \(HTTP 400\)"):
        await generator.generate("q", SOURCES, [])
    assert recorded.attempts == 4  # a refusal is not retried

    messages_api.failures = [(503, {"retry-after": "0"})] * 2 + [(503, {"retry-after": "30"})]
    with pytest.raises(ProviderError, match=r"unavailable \(HTTP 503\)") as raised:
        await generator.generate("q", SOURCES, [])
    assert raised.value.retry_after == 30 and recorded.attempts == 7  # max_retries (2) + 1
    await generator.aclose()  # type: ignore[attr-defined]


def test_doctor_shows_the_providers_own_probe(tmp_path: Path, messages_api: MessagesStandIn) -> None:
    settings = make_settings(tmp_path, llm_provider="messages", openai_base_url=messages_api.base_url)
    assert llm_checks(settings) == [Finding("llm endpoint", "ok", f"{messages_api.base_url} serves gpt-4o-mini")]
    assert messages_api.requests == []  # the probe is the provider's: this one asks nothing


def test_an_unknown_provider_is_a_settings_error(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="unknown chat provider 'anthropic': one of"):
        make_settings(tmp_path, llm_provider="anthropic")
