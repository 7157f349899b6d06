"""Socket Mode with Slack unreachable (issue 24: 216 lines and 6 tracebacks in 30 s, then
`Unclosed client session`): a real `docsbot serve` against a closed port logs one line per
condition, at most 5 lines in 30 s and its shutdown, and no traceback."""
from __future__ import annotations

import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from bot.socket_mode import OncePerCondition, condition


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_slack_in_socket_mode_logs_a_few_lines(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "page.md").write_text("---\naccess: public\n---\n# Page\n\nSome text.\n", encoding="utf-8")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    env = {**clean, "DOCSBOT_DATA_DIR": str(tmp_path / "index"), "SLACK_BOT_TOKEN": "xoxb-test",
           "SLACK_SIGNING_SECRET": "secret", "SLACK_APP_TOKEN": "xapp-test", "PORT": str(closed_port()),
           "SLACK_API_URL": f"http://127.0.0.1:{closed_port()}/api/"}
    subprocess.run([sys.executable, "-m", "commands.cli", "index", "--docs", str(docs)], env=env, check=True,
                   capture_output=True, timeout=300)
    served = subprocess.Popen([sys.executable, "-m", "commands.cli", "serve"], env=env, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert served.stdout is not None
    lines = [served.stdout.readline()]
    while "listening" not in lines[-1]:
        assert lines[-1], "serve exited: " + "".join(lines)
        lines.append(served.stdout.readline())
    time.sleep(30)
    served.send_signal(signal.SIGINT)
    out = "".join(lines) + served.communicate(timeout=60)[0]
    logged = out.strip().splitlines()
    assert len(logged) <= 5 + 1, out  # 5 in 30 s, and the shutdown line
    assert "Traceback" not in out and "Unclosed" not in out, out
    assert sum("Socket Mode: cannot reach" in line for line in logged) == 1, out
    assert "retrying in" in out and "check outbound HTTPS" in out


def test_the_sdk_filter_keeps_each_condition_once_without_traceback() -> None:
    once = OncePerCondition()

    def record(message: str, level: int = 40) -> logging.LogRecord:
        return logging.LogRecord("sdk", level, __file__, 1, message, None, (ValueError, ValueError("x"), None))

    first = record("Failed to connect (error: Cannot connect to host 10.0.0.1:443); Retrying...")
    assert once.filter(first) and first.exc_info is None
    assert not once.filter(record("Failed to connect (error: Cannot connect to host 10.0.0.2:443); Retrying..."))
    assert not once.filter(record("A new session (s_123) has been established", logging.INFO))
    assert once.filter(record("Failed to connect (error: again); Retrying..."))  # a new session, a new episode
    what, check = condition(OSError("refused"), "https://slack.com/api/")
    assert "cannot reach https://slack.com/api/" in what and "SLACK_API_URL" in check
