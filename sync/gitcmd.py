"""Running the real `git` command, with credentials kept out of every message."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")


class GitError(RuntimeError):
    """A git command failed; the message is safe to log (credentials are masked)."""


def redact(text: str) -> str:
    """Mask user:token@ in URLs."""
    return _CREDENTIALS.sub("***@", text)


def git(cwd: Path, *args: str, timeout: float = 300) -> str:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotePath=false", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"},
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} timed out after {timeout:.0f}s") from None
    except FileNotFoundError:
        raise GitError("the git command is not installed") from None
    if done.returncode != 0:
        message = (done.stderr or done.stdout).strip().splitlines()
        raise GitError(redact(f"git {args[0]} failed: {message[-1] if message else done.returncode}"))
    return done.stdout


def toplevel(path: Path) -> Path | None:
    """The work tree containing path, or None when it is not in a git repository."""
    try:
        return Path(git(path, "rev-parse", "--show-toplevel").strip())
    except GitError:
        return None


def last_commits(repo: Path, subdir: str = "", rev: str = "HEAD") -> dict[str, tuple[str, str]]:
    """For every file under subdir at rev: (last commit that touched it, its ISO date).

    Paths are relative to subdir. One `git log` pass, newest first; the first sighting wins."""
    prefix = subdir.strip("/") + "/" if subdir.strip("/") else ""
    out = git(repo, "log", rev, "--format=%x00%H %cI", "--name-only", "--no-renames", "--", prefix or ".")
    found: dict[str, tuple[str, str]] = {}
    commit = date = ""
    for line in out.splitlines():
        if line.startswith("\x00"):
            commit, date = line[1:].split(" ", 1)
        elif line and line.startswith(prefix):
            found.setdefault(line[len(prefix):], (commit, date))
    return found
