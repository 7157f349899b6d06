"""Failed authentications at `/mcp`, counted per client address and in all, in this process.

Each failure (no token, a wrong, revoked or expired one, a deactivated owner) may have cost a
look-up in the state database. Past `per_address` failures from one address, or `overall` from
every address together, in the last `window_s`, a request is refused (429) before its token is
looked up, until the oldest failure counted leaves the window: guessing tokens, or a
misconfigured agent retrying in a loop, stops costing queries. A token that was accepted within
the window is not held back by others' failures (it is still looked up, so a revocation holds
from its next request): people already at work keep working while someone guesses.

Counts are in memory, per replica (N replicas allow N times the failures), and bounded: only
failures inside the window are kept, and there are at most `overall` of them, plus the requests
already looking up when the limit was reached.
"""
from __future__ import annotations

import hashlib
import logging
import time
from collections import deque
from collections.abc import Callable

log = logging.getLogger(__name__)


class AuthFailures:
    def __init__(self, per_address: int, overall: int, window_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.per_address = per_address
        self.overall = overall
        self.window_s = window_s
        self._clock = clock
        self._failures: deque[tuple[float, str]] = deque()  # (when, address), oldest first
        self._by_address: dict[str, deque[float]] = {}
        self._accepted: dict[str, float] = {}  # a token's digest -> when it was last accepted

    def wait_s(self, address: str, token: str) -> float:
        """0 when a request from `address` with `token` may be looked up now, else the seconds
        until it may."""
        now = self._forget_old()
        if _digest(token) in self._accepted:
            return 0.0
        waits = []
        if len(self._failures) >= self.overall:
            waits.append(self._failures[0][0] + self.window_s - now)
        mine = self._by_address.get(address)
        if mine and len(mine) >= self.per_address:
            waits.append(mine[0] + self.window_s - now)
        return max(waits, default=0.0)

    def failed(self, address: str, token: str) -> None:
        """A request from `address` failed to authenticate; `token` (maybe "") is accepted no more."""
        now = self._forget_old()
        self._accepted.pop(_digest(token), None)
        self._failures.append((now, address))
        mine = self._by_address.setdefault(address, deque())
        mine.append(now)
        if len(mine) == self.per_address:
            log.warning("MCP: %d failed authentications from %s in %.0f s: its requests are refused until the "
                        "oldest is %.0f s old", len(mine), address, self.window_s, self.window_s)
        if len(self._failures) == self.overall:
            log.warning("MCP: %d failed authentications in %.0f s from every address together: requests with a "
                        "token not accepted recently are refused until the oldest is %.0f s old",
                        len(self._failures), self.window_s, self.window_s)

    def accepted(self, token: str) -> None:
        digest = _digest(token)
        self._accepted.pop(digest, None)  # to the end: the dict stays in the order of acceptance
        self._accepted[digest] = self._clock()

    def _forget_old(self) -> float:
        """Now, after dropping what left the window (failures and accepted tokens)."""
        now = self._clock()
        while self._failures and self._failures[0][0] <= now - self.window_s:
            _, address = self._failures.popleft()
            mine = self._by_address[address]
            mine.popleft()
            if not mine:
                del self._by_address[address]
        while self._accepted and next(iter(self._accepted.values())) <= now - self.window_s:
            del self._accepted[next(iter(self._accepted))]
        return now


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()
