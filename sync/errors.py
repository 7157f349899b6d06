"""Errors of a sync that a person can act on; `docsbot` prints them as one line."""
from __future__ import annotations


class SyncError(RuntimeError):
    """A sync could not run or complete; the message is safe to log (credentials masked)."""


class SyncBusy(SyncError):
    """Another sync holds the lock."""
