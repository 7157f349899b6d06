"""The reranker client against a local stand-in speaking the `/rerank` protocol: its order is
used, and when it is slow, failing or down the fused order is kept and the fallback is counted."""
from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from foundation.wiring import rag_config
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.levels import Level
from rag.store.search import Store
from tests.support.settings import make_settings
from tests.standins.rerank_server import RerankStandIn

QUESTION = "how do I set up the VPN on Linux?"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def reranker() -> RerankStandIn:
    server = RerankStandIn().start()
    yield server
    server.stop()


def engine_with(sample_index: Path, embedder: LocalMiniLM, url: str, **overrides: object) -> Engine:
    settings = make_settings(sample_index, rerank_url=url, rerank_model="rerank-test", rerank_api_key="sk-rerank",
                             **overrides)
    return Engine(rag_config(settings), Store(str(sample_index)), embedder, ExtractiveAnswerer())


def test_the_rerankers_order_is_used(sample_index: Path, embedder: LocalMiniLM, reranker: RerankStandIn) -> None:
    reranker.score = lambda query, document: 1.0 if "Troubleshooting" in document else 0.0
    engine = engine_with(sample_index, embedder, reranker.url)
    retrieval, _, _ = asyncio.run(engine.search(QUESTION, Level.restricted))
    assert retrieval.rerank == "reranked"
    assert retrieval.selected[0].row["section"] == "Troubleshooting"
    body, headers = reranker.requests[0]
    assert body["model"] == "rerank-test" and body["query"] == QUESTION
    assert body["top_n"] == len(body["documents"]) == engine.config.rerank.top_n
    assert headers["Authorization"] == "Bearer sk-rerank"
    answer = asyncio.run(engine.ask(QUESTION, Level.restricted))
    assert answer.diagnostics.rerank == "reranked" and "sk-rerank" not in str(answer.to_json())


@pytest.mark.parametrize("failure", ["slow", "error", "down"])
def test_a_failing_reranker_keeps_the_fused_order_and_is_counted(
    sample_index: Path, embedder: LocalMiniLM, reranker: RerankStandIn, failure: str
) -> None:
    plain = Engine(rag_config(make_settings(sample_index)), Store(str(sample_index)), embedder, ExtractiveAnswerer())
    expected, _, _ = asyncio.run(plain.search(QUESTION, Level.restricted))
    url = reranker.url
    if failure == "slow":
        reranker.delay_s = 1.0
    elif failure == "error":
        reranker.status = 500
    else:
        url = f"http://127.0.0.1:{closed_port()}/v1/rerank"
    engine = engine_with(sample_index, embedder, url, rerank_timeout_s=0.3)
    answer = asyncio.run(engine.ask(QUESTION, Level.restricted))
    assert answer.answered, answer.detail
    reason = {"slow": "timed out after 0.3s", "error": "HTTP 500", "down": "ClientConnectorError"}[failure]
    assert answer.diagnostics.rerank == f"fallback: {reason}"
    retrieval, _, _ = asyncio.run(engine.search(QUESTION, Level.restricted))
    assert [c.chunk_id for c in retrieval.selected] == [c.chunk_id for c in expected.selected]
