"""OpenTelemetry traces of real processes, received by a local OTLP/HTTP endpoint that decodes
what it gets with opentelemetry-proto: one trace per question (the Slack event, the embedding,
each search, the generation and the post), and one per sync."""
from __future__ import annotations

import asyncio
import os
import sys
from collections import defaultdict
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from foundation.settings import Settings
from rag.engine import Engine
from tests.support.served import served
from tests.support.settings import REPO, SAMPLE_DOCS
from tests.support.slack import final_updates
from tests.support.waiting import until


class Receiver:
    """The OTLP/HTTP traces endpoint of a collector: protobuf POSTs on /v1/traces."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, bytes, bytes, str]] = []  # (trace id, span id, parent id, name)
        self.services: set[str] = set()

    async def traces(self, request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        export = ExportTraceServiceRequest.FromString(await request.read())
        for resource_spans in export.resource_spans:
            self.services |= {a.value.string_value for a in resource_spans.resource.attributes
                              if a.key == "service.name"}
            for scope in resource_spans.scope_spans:
                self.spans += [(s.trace_id.hex(), s.span_id, s.parent_span_id, s.name) for s in scope.spans]
        return web.Response(body=b"", content_type="application/x-protobuf")

    def by_trace(self) -> dict[str, list[str]]:
        traces: dict[str, list[str]] = defaultdict(list)
        for trace_id, _, _, name in self.spans:
            traces[trace_id].append(name)
        return traces


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    found = Receiver()
    app = web.Application()
    app.router.add_post("/v1/traces", found.traces)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield found, f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_one_trace_per_question(
    sample_engine: Engine, settings: Settings, receiver: tuple[Receiver, str]
) -> None:
    found, endpoint = receiver
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    async with served(settings.data_dir, **env) as bot:
        assert await bot.ask("how do I set up the VPN?") == 200
        await until(lambda: len(final_updates(bot.standin)) == 1)
        assert await bot.stop() == 0  # the exporter flushes on shutdown
    questions = [names for names in found.by_trace().values() if "generate" in names]
    assert len(questions) == 1, found.by_trace()
    [names] = questions
    assert {"slack.event", "embed", "search.dense", "search.text", "generate", "slack.post"} <= set(names), names
    roots = [name for trace_id, _, parent, name in found.spans if not parent and name in names]
    assert roots == ["slack.event"]
    assert found.services == {"docsbot"}


async def test_one_trace_per_sync(sample_engine: Engine, settings: Settings, receiver: tuple[Receiver, str]) -> None:
    found, endpoint = receiver
    env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "DOCSBOT_DATA_DIR": settings.data_dir,
           "DOCSBOT_DOCS_DIR": str(SAMPLE_DOCS)}
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "commands.cli", "sync", cwd=REPO, env=env,
                                                   stdout=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(process.wait(), 120) == 0
    assert [names for names in found.by_trace().values()] == [["sync"]]
    assert found.services == {"docsbot-sync"}

