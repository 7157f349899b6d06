"""Bounded retries of an endpoint's requests, the same for chat (rag/generation.py) and embeddings
(rag/embeddings.py): a transient failure (the provider's classification, rag/providers/protocol.py)
is retried up to `max_retries` times, after the endpoint's Retry-After or a jittered exponential
backoff, unless that wait would end past the total deadline; each failure and retry is counted
(rag/events.py) under the call it was."""
from __future__ import annotations

import random
import time
from typing import Any

from tenacity import RetryCallState, retry_if_exception_type, stop_after_attempt, wait_exponential
from tenacity.stop import stop_base

from rag import events
from rag.providers.protocol import Failure

_BACKOFF = wait_exponential(multiplier=0.5)  # 0.5 s, 1 s, 2 s, … before the jitter


class Transient(Exception):
    """An attempt failed in a way the next one may not (tenacity retries on it)."""

    def __init__(self, failure: Failure) -> None:
        super().__init__(failure.detail)
        self.failure = failure


def _failed_with(retry_state: RetryCallState) -> Failure:
    """What the attempt just made failed with (tenacity waits and sleeps only after a failure)."""
    exc = retry_state.outcome.exception() if retry_state.outcome else None
    assert isinstance(exc, Transient)
    return exc.failure


def _provider_wait(retry_state: RetryCallState) -> float:
    """The provider's Retry-After, else exponential backoff with up to 50% jitter."""
    retry_after = _failed_with(retry_state).retry_after
    return retry_after if retry_after is not None else _BACKOFF(retry_state) * (1 + random.random() / 2)


class _WaitPastDeadline(stop_base):
    """Stop when the wait before the next attempt would end after `deadline` (time.monotonic)."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def __call__(self, retry_state: RetryCallState) -> bool:
        return retry_state.upcoming_sleep > self.deadline - time.monotonic()


def policy(max_retries: int, deadline: float, call: events.Call) -> dict[str, Any]:
    """tenacity's arguments (for `retry` or `Retrying`/`AsyncRetrying`): retry on Transient, at most
    `max_retries` times and never to wait past `deadline` (time.monotonic); the last Transient is
    raised as is."""
    return dict(
        retry=retry_if_exception_type(Transient),
        stop=stop_after_attempt(max_retries + 1) | _WaitPastDeadline(deadline),
        wait=_provider_wait,
        before_sleep=lambda state: events.retried(call, _failed_with(state).kind),
        reraise=True,
    )
