"""Slack's rate limits as the bot meets them: HTTP 429 with `Retry-After` (seconds), per bucket.

Slack limits each Web API method per workspace (`chat.update` is Tier 3: 50+ calls a minute)
and `chat.postMessage` to about one message a second per channel. The bot keeps what Slack said
per bucket, in a `Lane`: the calls that make an answer visible wait their turn there, one at a
time and in order, and wait out Slack's Retry-After within a budget (outside any answer slot);
progress (bot.progress) is sent only while a lane has nothing else to do, and never waits.

slack_sdk's own 429 retry sleeps inside the call. It is off for the calls made here
(`own_retries`), and for every other call it never waits out more than RETRY_AFTER_CAP_S: Slack
has answered `Retry-After: 3600`.
"""
from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, TypeVar

from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.http_retry.request import HttpRequest
from slack_sdk.http_retry.response import HttpResponse
from slack_sdk.http_retry.state import RetryState

RETRY_AFTER_CAP_S = 60.0  # one of Slack's per-minute windows: a longer Retry-After is never waited out
FINAL_BUDGET_S = 60.0  # what one answer may wait for Slack's Retry-After, in all its calls
_UNSAID_RETRY_AFTER_S = 1.0  # a 429 without a readable Retry-After
_PER_CHANNEL = frozenset({"chat.postMessage"})  # buckets per channel; the others are per workspace

T = TypeVar("T")
_own_retries: ContextVar[bool] = ContextVar("docsbot_own_slack_retries", default=False)


@contextmanager
def own_retries() -> Iterator[None]:
    """Calls made inside handle Slack's 429 themselves: slack_sdk does not sleep on them."""
    token = _own_retries.set(True)
    try:
        yield
    finally:
        _own_retries.reset(token)


def retry_after_s(headers: Mapping[str, Any]) -> float:
    """Slack's Retry-After in seconds; headers as aiohttp gives them or as lists (slack_sdk's retry handlers)."""
    for name, value in headers.items():
        if name.lower() == "retry-after":
            value = value[0] if isinstance(value, list) and value else value
            try:
                return max(0.0, float(value))
            except (TypeError, ValueError):
                break
    return _UNSAID_RETRY_AFTER_S


def is_rate_limited(exc: SlackApiError) -> bool:
    return exc.response.status_code == 429


class RateLimited(Exception):
    """Slack asks to wait longer than the cap, or than the answer's budget has left."""

    def __init__(self, method: str, retry_after: float) -> None:
        super().__init__(f"{method} rate-limited for {retry_after:.0f} s")
        self.method = method
        self.retry_after = retry_after


class CappedRateLimitRetry(AsyncRateLimitErrorRetryHandler):
    """slack_sdk's 429 retry, except for calls under `own_retries` and for a Retry-After over the cap
    (the 429 is raised at once then). Fractional Retry-After values are read too."""

    async def _can_retry_async(
        self, *, state: RetryState, request: HttpRequest, response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> bool:
        return (response is not None and response.status_code == 429 and not _own_retries.get()
                and retry_after_s(response.headers) <= RETRY_AFTER_CAP_S)

    async def prepare_for_next_attempt_async(
        self, *, state: RetryState, request: HttpRequest, response: HttpResponse | None = None,
        error: Exception | None = None,
    ) -> None:
        if response is None:
            raise error or RuntimeError("no response to retry")
        state.next_attempt_requested = True
        await asyncio.sleep(retry_after_s(response.headers) + random.random())
        state.increment_current_attempt()


@dataclass
class Budget:
    """What one answer may still wait for Slack's Retry-After, across its calls."""

    left_s: float = FINAL_BUDGET_S


@dataclass
class Lane:
    """One of Slack's buckets: answers' calls go one at a time, in order, none while Retry-After runs."""

    turn: asyncio.Lock = field(default_factory=asyncio.Lock)
    waiting: int = 0  # answers' calls waiting for their turn or being made
    blocked_until: float = 0.0  # monotonic time Slack's last Retry-After runs out

    @property
    def blocked_for(self) -> float:
        return max(0.0, self.blocked_until - time.monotonic())

    @property
    def free(self) -> bool:
        """Nothing waits or runs here and Slack has not asked to wait: best-effort calls may go."""
        return self.waiting == 0 and not self.turn.locked() and self.blocked_for == 0

    def limited(self, retry_after: float) -> None:
        self.blocked_until = max(self.blocked_until, time.monotonic() + retry_after)


class Lanes:
    def __init__(self) -> None:
        self._lanes: dict[tuple[str, str], Lane] = {}

    def lane(self, method: str, channel: str) -> Lane:
        key = (method, channel if method in _PER_CHANNEL else "")
        if key not in self._lanes:
            self._lanes[key] = Lane()
        return self._lanes[key]

    async def send(self, method: str, channel: str, call: Callable[[], Awaitable[T]], budget: Budget) -> T:
        """`call` (one of `method`) when its turn comes, retried after each 429 once Retry-After has
        passed, within `budget`. RateLimited when Slack asks to wait longer than the cap or the budget;
        other errors are raised as they come."""
        lane = self.lane(method, channel)
        lane.waiting += 1
        try:
            async with lane.turn:
                while True:
                    wait = lane.blocked_for
                    if wait > min(RETRY_AFTER_CAP_S, budget.left_s):
                        raise RateLimited(method, wait)
                    if wait:
                        budget.left_s -= wait
                        await asyncio.sleep(wait)
                    made, result = await _once(lane, call)
                    if made:
                        return result  # type: ignore[return-value]
        finally:
            lane.waiting -= 1

    async def attempt(self, method: str, channel: str, call: Callable[[], Awaitable[T]]) -> T | None:
        """`call` at once if its lane is free, never waiting: None when it was not made, or Slack
        refused it with a 429 (noted in the lane). Other errors are raised."""
        lane = self.lane(method, channel)
        if not lane.free:
            return None
        async with lane.turn:
            return (await _once(lane, call))[1]


async def _once(lane: Lane, call: Callable[[], Awaitable[T]]) -> tuple[bool, T | None]:
    """`call` once, slack_sdk's own 429 retries off: (True, its result), or (False, None) when Slack
    refused it with a 429, whose Retry-After the lane then holds. Other errors are raised."""
    try:
        with own_retries():
            return True, await call()
    except SlackApiError as exc:
        if not is_rate_limited(exc):
            raise
        lane.limited(retry_after_s(exc.response.headers))
        return False, None
