"""A question about something the docs never mention is declined (issue 37, class 4), however
well its other words match: "can tRPC use gRPC?" quoted tRPC's transports as if they answered it.
A name (capitalised inside the sentence, mixed or upper case) that no source and no other page the
reader may read holds is the sign; context words are not names, nor is a unit after a number."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from docsbot.settings import Settings
from docsbot.wiring import rag_config
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.levels import Level
from rag.mentions import names, unmentioned
from rag.store.search import Store


@pytest.mark.parametrize(("question", "expected"), [
    ("can tRPC use gRPC as the transport between our services?", ["tRPC", "gRPC"]),
    ("what about Azure Functions?", ["Azure", "Functions"]),
    ("Dates arrive as strings, how do I keep them as Date objects?", ["Date"]),
    ("I'm based in Portugal. does the company chip in?", ["Portugal"]),
    ("how do I reject uploads bigger than 16 MB?", []),
    ("what is the SLA for Vite's build service?", ["SLA", "Vite"]),
])
def test_names(question: str, expected: list[str]) -> None:
    assert names(question) == expected


def test_unmentioned_matches_names_by_stem() -> None:
    texts = ["Deploy the Functions app with the Azure CLI."]
    assert unmentioned("what about Azure Functions?", texts) == []
    assert unmentioned("can tRPC use gRPC?", ["tRPC links and transports"]) == ["gRPC"]


async def test_a_question_about_what_the_docs_never_mention_is_declined_with_a_near_miss(
    sample_index: Path, settings: Settings, embedder: LocalMiniLM
) -> None:
    shutil.copytree(sample_index, settings.data_dir)
    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    never = await engine.ask("do we rotate the Stripe keys in Azure Key Vault?", Level.restricted)
    assert not never.answered and never.detail == "the docs never mention Azure"
    assert never.near_miss is not None and never.near_miss.doc_path == "security/secrets-management.md"
    known = await engine.ask("how often do we rotate the Stripe keys in Vault?", Level.restricted)
    assert known.answered and "Vault" in known.answer
