"""Errors a person can act on; every `docsbot` and `python -m eval` command prints them as one line."""
from __future__ import annotations

from state.errors import StateConfigError
from sync.errors import SyncBusy, SyncError

__all__ = ["ACTIONABLE", "StateConfigError", "SyncBusy", "SyncError", "UserError"]


class UserError(RuntimeError):
    """A problem the person at the terminal can fix (a missing folder, a bad setting...)."""


# With the libraries' own such errors (sync and state know nothing of docsbot): what a command
# catches to print one line instead of a traceback.
ACTIONABLE = (UserError, SyncError, StateConfigError)
