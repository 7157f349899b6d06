"""Best-effort progress in placeholders: the place in line, then "Looking through the docs…", and
the plan of a slow answer (bot/plan.py).

Slack allows `chat.update` about 50 calls a minute for the whole workspace, and the answers need
them: 200 people in line would otherwise edit their placeholders over a thousand times while the
line drains. So progress is coalesced (at most one pending text per placeholder: the latest),
sent by one background task, one call at a time, only while the bucket has no answer's call
waiting and no Retry-After running (bot.ratelimits), and edits within PROGRESS_EDITS_PER_MINUTE.
It is never retried and never waited for: a 429 leaves the text pending until Slack allows it,
unless a newer one or the answer supersedes it. A placeholder whose first post Slack refused is
posted the same way, if that happens before its answer is ready.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from contextlib import suppress
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks
from bot.placeholders import Placeholder, Placeholders
from bot.ratelimits import Lanes

log = logging.getLogger(__name__)

PROGRESS_EDITS_PER_MINUTE = 10.0  # a fifth of chat.update's Tier 3 floor: the rest is for answers
_EDITS_BURST = 5.0
_IDLE_LOOK_S = 0.2  # how often pending progress looks again for a free lane


class _Allowance:
    """A token bucket: `per_minute` edits, up to `burst` at once."""

    def __init__(self, per_minute: float, burst: float) -> None:
        self.per_s = per_minute / 60
        self.burst = burst
        self.tokens = burst
        self.at = time.monotonic()

    def ready(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.burst, self.tokens + (now - self.at) * self.per_s)
        self.at = now
        return self.tokens >= 1

    def take(self) -> None:
        self.tokens -= 1


class Progress:
    def __init__(self, client: AsyncWebClient, lanes: Lanes, placeholders: Placeholders) -> None:
        self.client = client
        self.lanes = lanes
        self.placeholders = placeholders
        self._edits = _Allowance(PROGRESS_EDITS_PER_MINUTE, _EDITS_BURST)
        # (what it shows, the message) by placeholder, in the order they first became pending
        self._pending: dict[Placeholder, tuple[str, dict[str, Any]]] = {}
        self._sending: Placeholder | None = None
        self._sent: asyncio.Future[None] | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def show(self, placeholder: Placeholder, text: str) -> None:
        """Show `text` in the placeholder when Slack allows (posting it if it is not yet posted)."""
        self.show_message(placeholder, blocks.notice(text), text)

    def show_message(self, placeholder: Placeholder, message: dict[str, Any], key: str) -> None:
        """Show `message` (`key` says what it shows: the same key again is no edit) likewise."""
        if placeholder.ended:
            return
        if placeholder.ts is not None and key == placeholder.shown:
            self._pending.pop(placeholder, None)
            return
        self._pending[placeholder] = (key, message)
        self._wake.set()
        if self._task is None or self._task.done():
            # A context of its own: the task outlives the question that started it.
            self._task = asyncio.get_running_loop().create_task(self._run(), name="placeholder-progress",
                                                                context=contextvars.Context())

    def forget(self, placeholder: Placeholder) -> None:
        """Nothing more is shown in the placeholder (its answer or a note is on its way)."""
        placeholder.ended = True
        self._pending.pop(placeholder, None)

    async def end(self, placeholder: Placeholder) -> None:
        """`forget`, then wait for a call of it in flight, so its final form lands last."""
        self.forget(placeholder)
        if self._sending is placeholder and self._sent is not None:
            await asyncio.shield(self._sent)

    async def _run(self) -> None:
        while self._pending:
            placeholder = self._next()
            if placeholder is None:
                self._wake.clear()
                with suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), _IDLE_LOOK_S)
                continue
            pending = self._pending.pop(placeholder)
            self._sending, self._sent = placeholder, asyncio.get_running_loop().create_future()
            try:
                shown = await self._send(placeholder, *pending)
            finally:
                self._sent.set_result(None)
                self._sending = None
            if not shown and not placeholder.ended:
                self._pending.setdefault(placeholder, pending)  # refused (429): later, unless superseded

    def _next(self) -> Placeholder | None:
        """The first pending placeholder whose bucket is free (and, for an edit, within the allowance)."""
        for placeholder in self._pending:
            if placeholder.ts is None:
                if self.lanes.lane("chat.postMessage", placeholder.channel).free:
                    return placeholder
            elif self.lanes.lane("chat.update", placeholder.channel).free and self._edits.ready():
                return placeholder
        return None

    async def _send(self, placeholder: Placeholder, key: str, message: dict[str, Any]) -> bool:
        """One try: False when Slack refused it with a 429; errors are logged and the text dropped."""
        channel = placeholder.channel
        try:
            if placeholder.ts is None:
                response = await self.lanes.attempt("chat.postMessage", channel, lambda: self.client.chat_postMessage(
                    channel=channel, thread_ts=placeholder.thread_ts, **message))
                if response is None:
                    return False
                placeholder.ts = response["ts"]
                self.placeholders.open(placeholder)
            else:
                self._edits.take()
                ts = placeholder.ts
                if await self.lanes.attempt("chat.update", channel, lambda: self.client.chat_update(
                        channel=channel, ts=ts, **message)) is None:
                    return False
        except SlackApiError as exc:
            log.warning("could not show progress in %s: %s", channel, exc.response.get("error"))
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("could not show progress in %s: %s", channel, exc)
        else:
            placeholder.shown = key
        return True
