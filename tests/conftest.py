"""Shared fixtures: the real embedding model (loaded once), isolated settings, the sample docs
indexed once into a real LanceDB directory, an OpenAI-compatible stand-in server, and state
databases (SQLite, and a fresh Postgres database per test)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.folder import index_folder
from docsbot.settings import Settings
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from tests.scratch_db import scratch_database
from tests.standins.openai_server import OpenAIStandIn
from tests.standins.s3 import LocalS3, local_s3

REPO = Path(__file__).resolve().parent.parent
SAMPLE_DOCS = REPO / "docs-sync"
SHARED = REPO.parent / "shared"
# Read at import: `_clean_env` removes every DOCSBOT_* variable before each test.
TEST_DATABASE_URL = os.environ.get("DOCSBOT_TEST_DATABASE_URL", "")
_postgres_note: list[str] = []  # why Postgres-parametrised tests ran on SQLite, if they did


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


# -- State databases ------------------------------------------------------------------------------
@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalS3]:
    """A local S3 server with one bucket; this process gets its AWS_* variables."""
    with local_s3() as server:
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        yield server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _throwaway_postgres(folder: Path) -> tuple[str, Path] | None:
    """Start a private server from the Postgres binaries (initdb/pg_ctl); None when impossible
    (no binaries, or running as root, which initdb refuses)."""
    if not (shutil.which("initdb") and shutil.which("pg_ctl")):
        _postgres_note.append("no DOCSBOT_TEST_DATABASE_URL and no Postgres binaries")
        return None
    data, port = folder / "data", _free_port()
    try:
        subprocess.run(["initdb", "-D", str(data), "-U", "postgres", "-A", "trust"], check=True, capture_output=True)
        subprocess.run(
            ["pg_ctl", "-D", str(data), "-w", "-l", str(folder / "log"),
             "-o", f"-p {port} -k {folder} -c listen_addresses=127.0.0.1"],
            check=True, capture_output=True,
        )
    except subprocess.CalledProcessError as exc:
        why = (exc.stderr.decode(errors="replace").strip().splitlines() or ["?"])[-1]
        _postgres_note.append(f"no DOCSBOT_TEST_DATABASE_URL and a throwaway server failed to start ({why})")
        return None
    return f"postgresql://postgres@127.0.0.1:{port}/postgres", data


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | None]:
    """An admin URL of a Postgres server: DOCSBOT_TEST_DATABASE_URL, else a throwaway server, else None."""
    if TEST_DATABASE_URL:
        yield TEST_DATABASE_URL
        return
    server = _throwaway_postgres(tmp_path_factory.mktemp("postgres"))
    yield server[0] if server else None
    if server:
        subprocess.run(["pg_ctl", "-D", str(server[1]), "-m", "immediate", "stop"], capture_output=True)


@pytest.fixture
def postgres_url(postgres_server: str | None, tmp_path: Path) -> Iterator[str]:
    """A freshly created Postgres database with a random name, dropped afterwards (tests run
    in parallel with other checkouts' tests on the same server). Without Postgres: a SQLite file."""
    if postgres_server is None:
        yield f"sqlite:///{tmp_path / 'state-instead-of-postgres.db'}"
        return
    with scratch_database(postgres_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgres"])
def state_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The state database URL, once per backend."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'state.db'}"
    return request.getfixturevalue("postgres_url")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under xdist (`make test`) a worker hands its note to the controller, which prints it."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None and _postgres_note:
        workeroutput["postgres_note"] = _postgres_note[0]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    note = getattr(node, "workeroutput", {}).get("postgres_note")
    if note and not _postgres_note:
        _postgres_note.append(note)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _postgres_note:
        terminalreporter.write_line(f"Postgres: {_postgres_note[0]}; Postgres-parametrised tests ran on SQLite")
