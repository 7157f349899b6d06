"""Running the real `git` command, with credentials kept out of every message."""
from __future__ import annotations

import io
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Generator, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast
from urllib.parse import unquote, urlsplit, urlunsplit

_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")


class GitError(RuntimeError):
    """A git command failed; the message is safe to log (credentials are masked)."""


def redact(text: str) -> str:
    """Mask user:token@ in URLs."""
    return _CREDENTIALS.sub("***@", text)


_ENV = {"GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
# A line of git's output naming why the system refused a write (LC_ALL=C: in English).
_SYSTEM_ERROR = re.compile(r"No space left on device|File too large|Disk quota exceeded|Read-only file system|"
                           r"Input/output error", re.IGNORECASE)
# A remote that accepts the connection and then sends nothing (a hung server, a proxy that black-
# holes): git waits on it for as long as the command's timeout allows. Over http(s), a transfer
# that moves no byte for STALL_S ends ("Operation too slow"). Over ssh the fetch's own deadline
# bounds it (sync/workcopy.py): ssh options are the operator's (core.sshCommand, ~/.ssh/config).
STALL_S = 20
_STALLS = ("-c", "http.lowSpeedLimit=1", "-c", f"http.lowSpeedTime={STALL_S}")
# git asks this credential helper (a shell function, set through GIT_CONFIG_* variables) for the
# user name and token, which it reads from the two variables below: they are in the environment
# of git alone, never in a command line that every local user can read in /proc/<pid>/cmdline.
_USER, _TOKEN = "DOCSBOT_GIT_USERNAME", "DOCSBOT_GIT_PASSWORD"
_HELPER = f"!f() {{ test \"$1\" != get || printf 'username=%s\\npassword=%s\\n' \"${_USER}\" \"${_TOKEN}\"; }}; f"


def without_credentials(url: str) -> tuple[str, dict[str, str]]:
    """An http(s) URL without its `user:token@`, and the environment that hands them to git."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or "@" not in parts.netloc:
        return url, {}
    userinfo, host = parts.netloc.rsplit("@", 1)
    user, _, token = userinfo.partition(":")
    env = {
        "GIT_CONFIG_COUNT": "2",
        "GIT_CONFIG_KEY_0": "credential.helper", "GIT_CONFIG_VALUE_0": "",  # no other helper stores it
        "GIT_CONFIG_KEY_1": "credential.helper", "GIT_CONFIG_VALUE_1": _HELPER,
        _USER: unquote(user), _TOKEN: unquote(token),
    }
    return urlunsplit(parts._replace(netloc=host)), env


def git(cwd: Path, *args: str, timeout: float = 300, env: Mapping[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", "-c", "core.quotePath=false", *_STALLS, *args],
            cwd=cwd,
            capture_output=True,
            encoding="utf-8",
            errors="surrogateescape",  # a file name that is not UTF-8 keeps its bytes (see git_records)
            timeout=timeout,
            env={**os.environ, **_ENV, **(env or {})},
        )
    except subprocess.TimeoutExpired:
        raise GitError(f"git {_command(args)} timed out after {timeout:.0f}s") from None
    except FileNotFoundError:
        raise GitError("the git command is not installed") from None
    if done.returncode != 0:
        output = (done.stderr or done.stdout).encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise GitError(failure(_command(args), output, done.returncode))
    return done.stdout


def _command(args: tuple[str, ...]) -> str:
    """The git command a message names: `checkout` of `-c core.sparseCheckout=true checkout ...`."""
    at = 0
    while at < len(args) - 1 and args[at] == "-c":
        at += 2
    return args[at] if args else ""


def failure(command: str, output: str, returncode: int) -> str:
    """One line for a failed git command: its last error line, with the line naming a system
    error when another one does ("No space left on device" comes before git's "unpack-objects
    failed"), or the signal that killed it (SIGXFSZ: over the file size limit)."""
    lines = output.strip().splitlines()
    if returncode < 0:
        signal_name = signal.Signals(-returncode).name
        cause = f"killed by {signal_name} ({signal.strsignal(-returncode) or 'signal'})"
    else:  # git's own error line, before the hints it may print after it
        cause = next((line for line in reversed(lines) if line.startswith(("fatal:", "error:"))),
                     lines[-1] if lines else str(returncode))
    system = next((line for line in reversed(lines) if _SYSTEM_ERROR.search(line)), None)
    if system is not None and system != cause:
        cause = f"{cause}; {system.strip()}"
    return redact(f"git {command} failed: {cause}")


def toplevel(path: Path) -> Path | None:
    """The work tree containing path, or None when it is not in a git repository."""
    try:
        return Path(git(path, "rev-parse", "--show-toplevel").strip())
    except GitError:
        return None


def git_records(cwd: Path, *args: str) -> Generator[str, None, None]:
    """NUL-terminated records of a git command run with `-z`, as they come; closing the iterator
    early stops git. Any byte but NUL can be in a file name, a newline included, and a name need
    not be UTF-8: its other bytes are decoded as surrogate escapes, as Python's os functions do,
    so the name still opens the file and the sync skips it with a reason (rag.paths.not_utf8)."""
    with tempfile.TemporaryFile() as errors:
        try:
            proc = subprocess.Popen(
                ["git", "-c", "core.quotePath=false", *_STALLS, *args], cwd=cwd, stdout=subprocess.PIPE,
                stderr=errors, env={**os.environ, **_ENV},
            )
        except FileNotFoundError:
            raise GitError("the git command is not installed") from None
        stdout = cast(io.BufferedReader, proc.stdout)  # stdout=PIPE, buffered
        finished = False
        try:
            pending = b""
            while chunk := stdout.read1(1 << 16):
                *records, pending = (pending + chunk).split(b"\0")
                for record in records:
                    yield record.decode("utf-8", "surrogateescape")
            finished = True
        finally:
            if proc.poll() is None:
                proc.kill()
            stdout.close()
            proc.wait()
        if finished and proc.returncode != 0:
            errors.seek(0)
            raise GitError(failure(_command(args), errors.read().decode(errors="replace"), proc.returncode))


def _prefix(subdir: str) -> str:
    return subdir.strip("/") + "/" if subdir.strip("/") else ""


def last_commits(
    repo: Path, subdir: str = "", rev: str = "HEAD", only: set[str] | None = None
) -> dict[str, tuple[str, str]]:
    """For every file under subdir at rev: (last commit that touched it, its ISO date).

    Paths are relative to subdir. One `git log` pass, newest first; the first sighting wins.
    With `only`, the pass stops as soon as those paths are found, so a sync of recently changed
    files reads the top of the history only (the walk is the same, so the answer is too)."""
    prefix = _prefix(subdir)
    found: dict[str, tuple[str, str]] = {}
    wanted = None if only is None else set(only)
    if wanted is not None and not wanted:
        return found
    records = git_records(repo, "log", rev, f"--format={_COMMIT}%H %cI", *_NAMES, "--", prefix or ".")
    for (commit, date), repo_path in _logged_paths(records):
        if not repo_path.startswith(prefix):
            continue
        path = repo_path[len(prefix):]
        if wanted is None:
            found.setdefault(path, (commit, date))
        elif path in wanted:
            found[path] = (commit, date)
            wanted.discard(path)
            if not wanted:
                records.close()
                break
    return found


# `git log -z --name-status`: a header record per commit, then a status record ("M", after a
# newline when it is the commit's first) and a path record per file. A path never starts with
# "/", so a header that does cannot be taken for one.
_COMMIT = "/"
_NAMES = ("--name-status", "--no-renames", "-z")


def _logged_paths(records: Iterator[str]) -> Iterator[tuple[tuple[str, str], str]]:
    """((commit, date), path) for every path of every commit in a `git log` with _NAMES whose
    format is f"{_COMMIT}%H %cI" (or empty, when commit and date are not wanted)."""
    commit = date = ""
    for record in records:
        if record.startswith(_COMMIT):
            commit, _, date = record[len(_COMMIT):].partition(" ")
        elif record.strip("\n") and (path := next(records, "")):  # a status letter: its path follows
            yield (commit, date), path


@dataclass(frozen=True)
class FileChange:
    """One line of `git diff --name-status -M`: status letter, old path, new path (repo paths)."""

    status: str  # A, M, D, R (renamed), C (copied), T (type changed)
    old: str
    new: str


def diff_name_status(repo: Path, old: str, new: str, subdir: str = "") -> list[FileChange]:
    """Files that differ between two commits under subdir, renames detected (-M)."""
    out = git(repo, "diff", "--name-status", "-M", "-z", old, new, "--", _prefix(subdir) or ".")
    fields = out.split("\0")
    changes, i = [], 0
    while i < len(fields) - 1:
        status = fields[i][:1]
        if status in ("R", "C"):
            changes.append(FileChange(status, fields[i + 1], fields[i + 2]))
            i += 3
        else:
            changes.append(FileChange(status, fields[i + 1], fields[i + 1]))
            i += 2
    return changes


def touched_paths(repo: Path, old: str, new: str, subdir: str = "") -> set[str]:
    """Paths (relative to subdir) that some commit in old..new touched, even if the net diff is
    empty (an edit and its revert): their last-touching commit changed."""
    prefix = _prefix(subdir)
    records = git_records(repo, "log", f"{old}..{new}", "--format=", *_NAMES, "--", prefix or ".")
    return {path[len(prefix):] for _, path in _logged_paths(records) if path.startswith(prefix)}


def has_commit(repo: Path, commit: str) -> bool:
    try:
        git(repo, "cat-file", "-e", f"{commit}^{{commit}}")
        return True
    except GitError:
        return False


def is_ancestor(repo: Path, old: str, new: str) -> bool:
    try:
        git(repo, "merge-base", "--is-ancestor", old, new)
        return True
    except GitError:
        return False
