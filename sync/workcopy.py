"""The private working copy of the docs repository: fetched, then checked out at the remote head.

The repository URL is passed to `git fetch` on every sync and never written to the copy's config;
a `user:token@` in it is taken out of the URL and handed to git through its environment (see
`without_credentials`), so it is in no process's command line. Every message goes through `redact`.

Git holds names the file system cannot (a part over 255 bytes, a path over PATH_MAX): a plain
checkout of such a commit fails, and every later sync with it. The checkout is sparse, leaving
those files out of the work tree; reading them then fails with their reason, so they are skipped
and reported like any other unreadable file, and the rest of the commit applies.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path

from tenacity import (RetryCallState, Retrying, retry_if_exception_type, stop_after_attempt, stop_after_delay,
                      wait_exponential)

from rag import too_long
from sync.config import SyncConfig
from sync.errors import SyncError
from sync.gitcmd import GitError, git, git_records, redact, toplevel, without_credentials

log = logging.getLogger(__name__)

FETCHED_REF = "refs/remotes/origin/docs"
# In .git: the commit the work tree was last made exactly (checked out and cleaned), removed
# before each checkout starts, so a checkout killed half-way is never taken for a finished one.
CHECKED_OUT = "docsbot-checked-out"
_COMMIT_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_SCP_LIKE = re.compile(r"^[^/]+:")  # git@host:org/repo.git
_GLOB_SPECIAL = re.compile(r"[\\*?\[\] ]")  # escaped with a backslash in a sparse-checkout pattern
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # a newline cannot be in a pattern line: '?' matches it


def is_local_uri(uri: str) -> bool:
    """A plain path, as opposed to a URL (`s3://...`, `https://...`) or an scp-like address."""
    return "://" not in uri and not _SCP_LIKE.match(uri)


def work_dir(config: SyncConfig) -> Path:
    """Where the working copy and the lock file live."""
    if config.work_dir:
        return Path(config.work_dir)
    if not is_local_uri(config.data_dir):
        raise SyncError("DOCSBOT_DATA_DIR is not a local folder: set DOCSBOT_WORK_DIR for the git working copy")
    return Path(config.data_dir) / "sync"


def repo_url(config: SyncConfig) -> str:
    """The configured repository, with a local path made absolute (git runs in the work dir)."""
    if config.repo is None:
        raise SyncError("no docs repository configured: set DOCSBOT_REPO or pass --repo")
    url = config.repo.strip()
    return str(Path(url).expanduser().resolve()) if is_local_uri(url) else url


@dataclass
class WorkCopy:
    path: Path
    url: str
    branch: str = ""  # empty: the remote's HEAD
    timeout: float = 300.0
    retries: int = 3
    backoff_s: float = 2.0

    @classmethod
    def from_config(cls, config: SyncConfig) -> "WorkCopy":
        return cls(
            work_dir(config) / "repo", repo_url(config), config.branch, config.git_timeout_s,
            config.fetch_retries, config.retry_backoff_s,
        )

    def fetch(self) -> str:
        """Fetch the branch (retrying with exponential backoff) and return its head commit. The
        attempts together, backoff included, take at most `timeout` (a silent remote held a sync
        for 4 x 300 s before): each gets what is left of it."""
        if not (self.path / ".git").is_dir():
            self.path.mkdir(parents=True, exist_ok=True)
            git(self.path, "init", "--quiet")
        source = f"refs/heads/{self.branch}" if self.branch else "HEAD"
        url, credentials = without_credentials(self.url)
        deadline = time.monotonic() + self.timeout
        for attempt in Retrying(
            retry=retry_if_exception_type(GitError),
            stop=stop_after_attempt(self.retries + 1) | stop_after_delay(self.timeout),
            wait=wait_exponential(multiplier=self.backoff_s),  # backoff_s, then twice as long each time
            before_sleep=self._log_retry,
            reraise=True,
        ):
            with attempt:
                git(self.path, "fetch", "--quiet", "--no-tags", "--force", url, f"+{source}:{FETCHED_REF}",
                    timeout=max(1.0, deadline - time.monotonic()), env=credentials)
        return self._fetched_head()

    def _fetched_head(self) -> str:
        """The fetched commit, read from the ref's own file when it is a loose one (a sync of
        several sources runs one fetch per source: a `git rev-parse` each was a process more);
        git's answer when the ref is packed or not a plain commit id."""
        try:
            loose = (self.path / ".git" / FETCHED_REF).read_text(encoding="ascii").strip()
        except (OSError, UnicodeDecodeError):
            loose = ""
        if _COMMIT_ID.fullmatch(loose):
            return loose
        return git(self.path, "rev-parse", f"{FETCHED_REF}^{{commit}}").strip()

    def _log_retry(self, retry_state: RetryCallState) -> None:
        failure = retry_state.outcome.exception() if retry_state.outcome else None
        log.warning("fetch from %s failed (%s); retry %d/%d in %.1fs",
                    redact(self.url), failure, retry_state.attempt_number, self.retries, retry_state.upcoming_sleep)

    def checkout(self, commit: str) -> None:
        """Make the work tree exactly `commit` (local leftovers of a killed sync removed), but for
        the files whose path is too long for the file system."""
        marker = self.path / ".git" / CHECKED_OUT
        marker.unlink(missing_ok=True)
        # Only the lease holder runs git here, one command at a time: a lock is left by a git that
        # was killed (SIGXFSZ on a full disk, a kill -9), and would fail every later checkout.
        (self.path / ".git" / "index.lock").unlink(missing_ok=True)
        sparse = self.path / ".git" / "info" / "sparse-checkout"
        sparse.parent.mkdir(exist_ok=True)
        sparse.write_text(_sparse_patterns(self._unplaceable(commit)), encoding="utf-8", errors="surrogateescape")
        git(self.path, "-c", "core.sparseCheckout=true", "checkout", "--quiet", "--force", "--detach", commit,
            timeout=self.timeout)
        git(self.path, "clean", "--quiet", "-ffdx", timeout=self.timeout)
        marker.write_text(commit, encoding="ascii")

    def checked_out(self, commit: str) -> bool:
        """Whether the last checkout made the work tree exactly `commit` and finished: a sync of
        an unchanged head then needs none (five git processes, per source of a sync of several).
        Nothing but a checkout writes in the private copy."""
        try:
            return (self.path / ".git" / CHECKED_OUT).read_text(encoding="ascii") == commit
        except (OSError, UnicodeDecodeError):
            return False

    def _unplaceable(self, commit: str) -> list[str]:
        """The paths too long for the file system at `commit` and in the index now: a file the
        checkout deletes must stay left out too, or git looks for it in the work tree and fails."""
        # A new copy has no index yet: nothing to list in it.
        tracked = set(git_records(self.path, "ls-files", "-z")) if (self.path / ".git" / "index").exists() else set()
        tracked.update(git_records(self.path, "ls-tree", "-r", "-z", "--name-only", commit))
        return sorted(path for path in tracked if too_long(self.path.absolute() / path))

    def commit_date(self, commit: str) -> str:
        return git(self.path, "show", "-s", "--format=%cI", commit).strip()


def _sparse_patterns(left_out: list[str]) -> str:
    """Non-cone sparse-checkout patterns: every file but the `left_out` repository paths."""
    return "/*\n" + "".join(f"!/{_literal(path)}\n" for path in left_out)


def _literal(path: str) -> str:
    """A pattern that matches `path` (and at most names that differ in a control character only,
    which are as long)."""
    return _CONTROL.sub("?", _GLOB_SPECIAL.sub(lambda m: "\\" + m.group(), path))


def local_folder(config: SyncConfig) -> Path | None:
    """The folder to reconcile when the source is not a git repository (DOCSBOT_REPO unset, or
    a local path outside any git work tree); None for a git source."""
    if config.repo is None:
        folder = Path(config.docs_dir)
    else:
        url = repo_url(config)
        if not is_local_uri(url) or not Path(url).is_dir():
            return None
        # A folder holding `.git` is a work tree's top: no git process to ask (one per source and sync).
        top = Path(url) if (Path(url) / ".git").exists() else toplevel(Path(url))
        if top is not None and top.resolve() != Path(url):
            sub = Path(url).relative_to(top.resolve()).as_posix()
            raise SyncError(f"{url} is a folder inside the git repository {top}: set DOCSBOT_REPO={top} "
                            f"and DOCSBOT_REPO_SUBDIR={sub}")
        if top is not None:
            return None
        folder = Path(url)
    if not folder.is_dir():
        raise SyncError(f"docs folder {folder} does not exist")
    return folder
