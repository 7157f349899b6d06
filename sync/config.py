"""What `sync` is told: the docs source, the schedule and the lease, plus the index's and the
state store's own configuration (built by the application from its settings)."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from rag import RagConfig
from state.config import StateConfig


@dataclass(frozen=True)
class LeaseConfig:
    """The index-writer lease, kept in the state store: it expires `ttl_s` after its holder's
    last renewal, which comes every `renew_s`."""

    state: StateConfig
    ttl_s: float
    renew_s: float


@dataclass(frozen=True)
class SyncConfig:
    rag: RagConfig
    lease: LeaseConfig
    # A URL (it may hold credentials) or a local path; None: reconcile `docs_dir` instead.
    repo: str | None = field(repr=False)
    branch: str  # empty: the remote's HEAD
    docs_dir: str
    # Working copy and lock file; empty: `<data_dir>/sync`.
    work_dir: str
    git_timeout_s: float
    fetch_retries: int
    retry_backoff_s: float
    interval_minutes: float
    cron: str  # 5 fields; wins over the interval when set
    jitter_s: int
    watch_debounce_ms: int
    kill_at: Literal["", "before-write", "after-write"]  # fault injection for crash tests
    request_poll_s: float
    webhook_secret: str | None = field(repr=False)
    # Several repositories (DOCSBOT_SOURCES): the sources in force, read anew at each sync (a bad
    # edit of the file keeps the last good ones). None: `repo` (or `docs_dir`) is the one source.
    sources: Callable[[], tuple["SourceConfig", ...]] | None = field(default=None, compare=False)

    @property
    def data_dir(self) -> str:
        return self.rag.index.data_dir

    @property
    def state(self) -> StateConfig:
        return self.lease.state


@dataclass(frozen=True)
class SourceConfig:
    """One named source of several: its own repository, branch, docs settings, links, schedule,
    webhook secret and working copy (`sync`), and the name it had before a rename (`was`)."""

    name: str
    sync: SyncConfig
    was: str = ""
