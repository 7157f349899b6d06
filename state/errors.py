"""Errors of the state store that a person can act on (`docsbot` prints them as one line)."""
from __future__ import annotations


class StateConfigError(RuntimeError):
    """The configured state database cannot be used as given (an unsupported URL scheme)."""
