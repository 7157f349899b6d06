"""A question about something the docs never mention is declined (issue 37, class 4), however
well its other words match: "can tRPC use gRPC?" quoted tRPC's transports as if they answered it.
A name (upper or mixed case) that no source and no other page the reader may read holds is the
sign; a capitalised word (a person, a place) is not a name, nor is a unit after a number."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from foundation.settings import Settings
from foundation.wiring import rag_config
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.levels import Level
from rag.mentions import names, unmentioned
from rag.store.search import Store


@pytest.mark.parametrize(("question", "expected"), [
    ("can tRPC use gRPC as the transport between our services?", ["tRPC", "gRPC"]),
    ("what about Azure Functions?", []),
    ("How do I set up the VPN? I am on sick leave and my manager Bob must not know", ["VPN"]),
    ("I'm based in Portugal. does the company chip in?", []),
    ("how do I reject uploads bigger than 16 MB?", []),
    ("what is the SLA for Vite's build service?", ["SLA"]),
])
def test_names(question: str, expected: list[str]) -> None:
    assert names(question) == expected


def test_unmentioned_matches_names_by_stem() -> None:
    assert unmentioned("what about the Azure CLI?", ["Deploy the Functions app with the Azure CLI."]) == []
    assert unmentioned("can tRPC use gRPC?", ["tRPC links and transports"]) == ["gRPC"]


async def test_a_question_about_what_the_docs_never_mention_is_declined_with_a_near_miss(
    sample_index: Path, settings: Settings, embedder: LocalMiniLM
) -> None:
    shutil.copytree(sample_index, settings.data_dir)
    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    never = await engine.ask("do we rotate the Stripe keys with AWS KMS?", Level.restricted)
    assert not never.answered and never.detail == "the docs never mention KMS"
    assert never.near_miss is not None and never.near_miss.doc_path == "security/secrets-management.md"
    known = await engine.ask("how often do we rotate the Stripe keys in Vault?", Level.restricted)
    assert known.answered and "Vault" in known.answer
