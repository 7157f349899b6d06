"""A git remote that accepts the connection and never answers (a local TCP server that holds every
connection open and sends nothing): the fetch ends with one clear line well within its deadline,
instead of each attempt waiting out the whole git timeout (4 x 300 s = 1,217 s in the probe)."""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sync.gitcmd import STALL_S, GitError
from sync.workcopy import WorkCopy


@pytest.fixture
def silent_remote() -> Iterator[int]:
    """A port whose server accepts connections, reads nothing and never answers."""
    server = socket.create_server(("127.0.0.1", 0))
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for connection in held:
        connection.close()
    server.close()


def test_a_remote_that_never_answers_fails_the_fetch_within_its_stall_time(tmp_path: Path, silent_remote: int) -> None:
    copy = WorkCopy(tmp_path / "repo", f"http://user:s3cret@127.0.0.1:{silent_remote}/docs.git", "main",
                    timeout=90.0, retries=1, backoff_s=0.1)
    started = time.monotonic()
    with pytest.raises(GitError) as failed:
        copy.fetch()
    took = time.monotonic() - started
    assert took < 2 * STALL_S + 15, took  # two stalled attempts, not two 90 s timeouts
    message = str(failed.value)
    assert "too slow" in message and "s3cret" not in message and "\n" not in message, message
