"""Errors a person can act on; every `docsbot` and `python -m eval` command prints them as one line."""
from __future__ import annotations


class UserError(RuntimeError):
    """A problem the person at the terminal can fix (a missing folder, a bad setting...)."""
