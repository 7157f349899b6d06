"""A token in the repository URL reaches git through its environment, never its command line:
while `docsbot sync` fetches from `http://user:TOKEN@...` (a local HTTP server that asks for
Basic credentials, then holds the authenticated request), no process's argv contains the token,
and the server did receive it."""
from __future__ import annotations

import base64
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

TOKEN = "ghp_S3cretTok3nNeverInArgv"


class _GitServer(BaseHTTPRequestHandler):
    authorizations: list[str] = []
    release = threading.Event()

    def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
        auth = self.headers.get("Authorization")
        if auth is None:
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="docs"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.authorizations.append(auth)
        self.release.wait(30)  # git waits here, with the credentials in hand
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def argv_with(secret: str) -> list[str]:
    """The command lines of every process on the machine that contain `secret`."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue  # gone, or not ours to read
        if secret.encode() in cmdline:
            found.append(cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def test_sync_never_puts_the_token_in_argv(tmp_path: Path) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _GitServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "GIT_"))}
    env.update(
        DOCSBOT_REPO=f"http://docs-reader:{TOKEN}@127.0.0.1:{server.server_port}/acme/docs.git",
        DOCSBOT_DATA_DIR=str(tmp_path / "index"), DOCSBOT_SYNC_FETCH_RETRIES="0", DOCSBOT_GIT_TIMEOUT_S="60",
    )
    sync = subprocess.Popen([sys.executable, "-m", "commands.cli", "sync"], env=env, cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not _GitServer.authorizations and time.monotonic() < deadline and sync.poll() is None:
            time.sleep(0.05)
        assert _GitServer.authorizations, f"git never authenticated: {sync.communicate(timeout=5)}"
        leaks = argv_with(TOKEN)  # git, its helper and docsbot are all alive now
        assert leaks == []
        expected = base64.b64encode(f"docs-reader:{TOKEN}".encode()).decode()
        assert _GitServer.authorizations[0] == f"Basic {expected}"
    finally:
        _GitServer.release.set()
        out, err = sync.communicate(timeout=60)
        server.shutdown()
    assert sync.returncode != 0  # the stand-in serves no repository
    assert TOKEN not in out + err
    assert "docsbot: error: git fetch failed" in err
