"""Shared fixtures: the real embedding model (loaded once), isolated settings, the sample docs
indexed once into a real LanceDB directory, and an OpenAI-compatible stand-in server."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from sync.folder import index_folder
from docsbot.settings import Settings
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from tests.standins.openai_server import OpenAIStandIn

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DOCS = REPO / "docs-sync"
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's DOCSBOT_*, OPENAI_* or SLACK_* variables."""
    for name in list(os.environ):
        if name.startswith(("DOCSBOT_", "OPENAI_", "SLACK_")):
            monkeypatch.delenv(name)


def make_settings(data_dir: Path, **overrides: object) -> Settings:
    return Settings(_env_file=None, data_dir=str(data_dir), **overrides)


@pytest.fixture(scope="session")
def embedder() -> LocalMiniLM:
    return LocalMiniLM()


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path / "index")


@pytest.fixture(scope="session")
def sample_index(tmp_path_factory: pytest.TempPathFactory, embedder: LocalMiniLM) -> Path:
    """docs-sync/ indexed once per session; tests copy it before writing."""
    data = tmp_path_factory.mktemp("sample") / "index"
    engine = Engine.from_settings(make_settings(data), generator=ExtractiveAnswerer())
    engine.embedder = embedder
    index_folder(engine, SAMPLE_DOCS)  # with per-file commits, as `docsbot index` does
    return data


@pytest.fixture
def sample_engine(sample_index: Path, tmp_path: Path, embedder: LocalMiniLM) -> Engine:
    """An engine over a private copy of the indexed sample docs (extractive answerer)."""
    data = tmp_path / "index"
    shutil.copytree(sample_index, data)
    settings = make_settings(data)
    from rag.store import Store

    return Engine(settings, Store(str(data)), embedder, ExtractiveAnswerer())


@pytest.fixture
def openai_standin() -> OpenAIStandIn:
    server = OpenAIStandIn().start()
    yield server
    server.stop()
