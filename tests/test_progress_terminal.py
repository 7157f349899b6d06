"""Progress where a person looks (issue 36 item 2): on a terminal a live bar with files, chunks,
rate and ETA; under --json nothing but the JSON; a sync that replaces an index of other docs says
so first. Each run is a real `docsbot` process, on a real pseudo-terminal or a pipe."""
from __future__ import annotations

import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from pathlib import Path

COMMAND = [sys.executable, "-m", "commands.cli"]


def folders(tmp_path: Path) -> dict[str, str]:
    """The environment of a docsbot whose index was built by `docsbot index` of a sample folder,
    and whose DOCSBOT_DOCS_DIR is another folder of three pages."""
    sample, docs = tmp_path / "sample", tmp_path / "docs"
    for folder, pages in ((sample, 1), (docs, 3)):
        folder.mkdir()
        for n in range(pages):
            (folder / f"p{n}.md").write_text(f"# Page {n} of {folder.name}\n\nThe kettle number {n} is blue.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    env = {**env, "DOCSBOT_DATA_DIR": str(tmp_path / "data")}
    subprocess.run([*COMMAND, "index", "--docs", str(sample)], env=env, check=True, capture_output=True)
    return {**env, "DOCSBOT_DOCS_DIR": str(docs)}


def on_terminal(argv: list[str], env: dict[str, str]) -> str:
    """What `argv` wrote to its terminal (stdout and stderr on one pseudo-terminal)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # 24 rows, 120 columns
    child = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=follower, stderr=follower)
    os.close(follower)
    out = b""
    while True:
        try:
            piece = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not piece:
            break
        out += piece
    assert child.wait(timeout=300) == 0, out.decode(errors="replace")
    os.close(leader)
    return out.decode(errors="replace")


def test_a_sync_on_a_terminal_shows_a_bar_and_says_it_replaces_the_index(tmp_path: Path) -> None:
    shown = on_terminal([*COMMAND, "sync"], folders(tmp_path))
    replacing = shown.index("replacing the index of")
    assert str(tmp_path / "sample") in shown[replacing:].splitlines()[0]  # which docs it replaces, first
    bar = shown[replacing:shown.index("sync (reconcile")]
    assert "embedding" in bar and "chunk" in bar and "3/3 files" in bar, bar


def test_a_sync_with_json_prints_nothing_but_the_json(tmp_path: Path) -> None:
    env = folders(tmp_path)
    done = subprocess.run([*COMMAND, "sync", "--json"], env=env, capture_output=True, text=True, check=True)
    report = json.loads(done.stdout)
    assert report["added"] + report["modified"] == 3 and len(done.stdout.strip().splitlines()) == 1
    assert "embedded" not in done.stderr and "%" not in done.stderr
