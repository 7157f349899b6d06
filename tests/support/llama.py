"""The real llama.cpp server (llama-cpp-python) with SmolLM2-135M, as `make eval-llm` installs it
(eval/llm_server.py), started on a free port for the `llm` tests; where it is not installed they
skip with the reason, in one line."""
from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from eval.bench_acks import free_port
from eval.llm_server import DEFAULT_CACHE, MODEL_ALIAS, python_of, reason_file, server_command, venv

# Read at import: `_clean_env` removes every DOCSBOT_* variable before each test.
CACHE = Path(os.environ.get("DOCSBOT_LLM_SERVER_CACHE") or DEFAULT_CACHE)


def unavailable() -> str | None:
    """Why the server cannot run here (None: it can)."""
    if reason_file(CACHE).is_file():
        return reason_file(CACHE).read_text().strip().splitlines()[0]
    if not (venv(CACHE) / ".installed").is_file():
        return f"the llama.cpp server is not installed in {CACHE}: `make eval-llm` installs it"
    return None


@dataclass(frozen=True)
class Llama:
    base_url: str  # OPENAI_BASE_URL
    model: str  # DOCSBOT_CHAT_MODEL
    n_ctx: int
    log: Path  # the server's output


@contextmanager
def llama_server(log_dir: Path, n_ctx: int = 2048) -> Iterator[Llama]:
    """The server, ready (it lists its model) when this yields; stopped afterwards."""
    port = free_port()
    log = log_dir / f"llama-{port}.log"
    with log.open("w") as out:
        process = subprocess.Popen(server_command(python_of(CACHE), port, n_ctx), stdout=out, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            assert process.poll() is None, log.read_text()[-2000:]
            assert time.monotonic() < deadline, "the llama.cpp server did not start in 120 s"
            time.sleep(0.2)
        yield Llama(base_url, MODEL_ALIAS, n_ctx, log)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
