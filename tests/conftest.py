"""Shared fixtures: the real embedding model (loaded once), isolated settings, the sample docs
indexed once into a real LanceDB directory, an OpenAI-compatible stand-in server, state
databases (SQLite, and a fresh Postgres database per test), and the bot in the local Slack harness.
Helpers that are not fixtures are in tests/support/."""
from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from bot.local.harness import LocalSlack, local_slack
from foundation.settings import Settings
from foundation.wiring import lease_config, open_engine, rag_config
from pydantic import SecretStr
from rag import Engine, ExtractiveAnswerer, LocalMiniLM, open_index
from sync.folder import index_folder
from eval.standins.openai_server import OpenAIStandIn
from tests.standins.s3 import LocalS3, local_s3
from tests.support.clients import close_dropped_clients
from eval.scratch_db import scratch_database
from tests.support.pgvector import NO_PGVECTOR, database_name, index_database, running_pgvector
from tests.support.settings import SAMPLE_DOCS, SHARED, make_settings

# Read at import: `_clean_env` removes every DOCSBOT_* variable before each test.
TEST_DATABASE_URL = os.environ.get("DOCSBOT_TEST_DATABASE_URL", "")


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked `shared` (run by `make eval`) fails when ../shared is missing: never a silent skip."""
    if item.get_closest_marker("shared") and not SHARED.is_dir():
        pytest.fail(f"{item.nodeid} reads the shared eval folder, and {SHARED} is not there", pytrace=False)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never see the developer's DOCSBOT_*, OPENAI_* or SLACK_* variables."""
    for name in list(os.environ):
        if name.startswith(("DOCSBOT_", "OPENAI_", "SLACK_")):
            monkeypatch.delenv(name)


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
    settings = make_settings(data)
    engine = open_engine(settings, generator=ExtractiveAnswerer())
    engine.embedder = embedder
    index_folder(engine, lease_config(settings), SAMPLE_DOCS)  # with per-file commits, as `docsbot index` does
    return data


@pytest.fixture
def sample_engine(sample_index: Path, settings: Settings, embedder: LocalMiniLM) -> Engine:
    """An engine over a private copy of the indexed sample docs (extractive answerer), in the
    data dir of the `settings` fixture: a test hands those to the bot, the sync or the eval."""
    shutil.copytree(sample_index, settings.data_dir)
    config = rag_config(settings)
    return Engine(config, open_index(config.index), embedder, ExtractiveAnswerer())


@pytest.fixture
async def openai_standin() -> AsyncIterator[OpenAIStandIn]:
    server = OpenAIStandIn().start()
    yield server
    await close_dropped_clients()
    server.stop()


# -- State databases ------------------------------------------------------------------------------
@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalS3]:
    """A local S3 server with one bucket; this process gets its AWS_* variables."""
    with local_s3() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        yield server


NO_POSTGRES = "DOCSBOT_TEST_DATABASE_URL is not set: no Postgres server to test against (.ci/run sets it)"


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A freshly created Postgres database with a random name on DOCSBOT_TEST_DATABASE_URL's
    server, dropped afterwards (tests run in parallel with other checkouts' tests on the same
    server). Without that variable the test is skipped, and the summary says why."""
    if not TEST_DATABASE_URL:
        pytest.skip(NO_POSTGRES)
    with scratch_database(TEST_DATABASE_URL) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The state database URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return request.getfixturevalue("postgres_url")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Skips are one letter in `-q`'s progress; the reason the Postgres tests did not run is a line."""
    skipped = [r for r in terminalreporter.stats.get("skipped", []) if NO_POSTGRES in str(r.longrepr)]
    if skipped:
        terminalreporter.write_line(f"Postgres: {len(skipped)} test(s) skipped: {NO_POSTGRES}", yellow=True)
    reasons = {str(r.longrepr[2]).removeprefix("Skipped: ") for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r.longrepr, tuple) and NO_PGVECTOR in str(r.longrepr[2])}
    for reason in sorted(reasons):
        terminalreporter.write_line(f"pgvector index: tests skipped: {reason}", yellow=True)


# -- The index on each store (rag/store/registry.py) -------------------------------------------------
STORES = ["lancedb", "postgres"]


@pytest.fixture(scope="session")
def pgvector_server() -> Iterator[str]:
    """One PostgreSQL with pgvector per session (tests/support/pgvector.py); the tests that need
    it are skipped, with the reason, where it cannot start. Its folder is its own, not pytest's
    temp dir: another session's pytest prunes old temp dirs, and a server's data must outlive them."""
    with ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="docsbot-pgvector-"))
        try:
            url = stack.enter_context(running_pgvector(Path(folder)))
        except RuntimeError as exc:
            pytest.skip(str(exc))
        yield url


@pytest.fixture(params=STORES)
def index_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """DOCSBOT_INDEX_URL once per store: "" (LanceDB in the data dir) or a fresh Postgres index database."""
    if request.param == "lancedb":
        yield ""
        return
    with index_database(request.getfixturevalue("pgvector_server")) as url:
        yield url


@pytest.fixture(scope="session")
def pg_sample_index(pgvector_server: str, tmp_path_factory: pytest.TempPathFactory,
                    embedder: LocalMiniLM) -> Iterator[str]:
    """docs-sync/ indexed once per session into a Postgres database: its name (tests copy it)."""
    with index_database(pgvector_server) as url:
        settings = make_settings(tmp_path_factory.mktemp("pg-sample") / "index", index_url=url)
        engine = open_engine(settings, generator=ExtractiveAnswerer())
        engine.embedder = embedder
        index_folder(engine, lease_config(settings), SAMPLE_DOCS)
        yield database_name(url)


@pytest.fixture(params=STORES)
def any_sample_engine(request: pytest.FixtureRequest, settings: Settings, embedder: LocalMiniLM) -> Iterator[Engine]:
    """sample_engine on each store: a copy of the sample index in LanceDB, then in Postgres."""
    if request.param == "lancedb":
        yield request.getfixturevalue("sample_engine")
        return
    template = request.getfixturevalue("pg_sample_index")
    with index_database(request.getfixturevalue("pgvector_server"), template) as url:
        config = rag_config(settings.model_copy(update={"index_url": SecretStr(url)}))
        yield Engine(config, open_index(config.index), embedder, ExtractiveAnswerer())


# -- Slack ------------------------------------------------------------------------------------------
@pytest.fixture
async def local(sample_engine: Engine, settings: Settings) -> AsyncIterator[LocalSlack]:
    async with local_slack(settings, sample_engine) as running:
        yield running
