"""What `sync` reports for an application's metrics: each sync's outcome.

`sync` knows no metrics library. It calls the installed `SyncEvents`, which does nothing until the
application installs its own (docsbot's Prometheus series, foundation/observability/metrics.py).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from sync.report import SyncReport


class SyncEvents(Protocol):
    def sync_ok(self, report: "SyncReport", meta: dict[str, Any], chunks: int) -> None:
        """A good sync: its report, and the index it left (the store's meta, its chunk count)."""

    def sync_failed(self, seconds: float) -> None:
        """A sync that failed after `seconds`."""


class _Quiet:
    def sync_ok(self, report: "SyncReport", meta: dict[str, Any], chunks: int) -> None:
        pass

    def sync_failed(self, seconds: float) -> None:
        pass


_installed: SyncEvents = _Quiet()


def install(events: SyncEvents) -> None:
    global _installed
    _installed = events


def events() -> SyncEvents:
    return _installed
