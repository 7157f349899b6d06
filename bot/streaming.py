"""An answer streamed into its thread as the model writes it (chat.startStream / appendStream /
stopStream through slack_sdk's `chat_stream`).

The engine passes on only what its stream gate lets through (rag/check.py StreamGate): nothing
before a citation that names a given source, no link the sources do not contain, no markdown
link at all. The stream starts with the first such text and carries it escaped. The citation
check still decides at the end: when the stream stops, the message is replaced by the same Block
Kit message a non-streamed answer gets (verbatim text, sources, feedback controls), or by the
abstention when the citations did not hold.
"""
from __future__ import annotations

import logging
from typing import Any, Protocol

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_chat_stream import AsyncChatStream
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks

log = logging.getLogger(__name__)

_BUFFER_CHARS = 256  # text gathered per Web API call (Slack rate-limits appendStream)
_ERRORS = (SlackApiError, SlackClientError, OSError, TimeoutError)


class StreamTarget(Protocol):
    """Where a reply streams, and to whom (bot.answering's Question, which imports this module)."""

    @property
    def channel(self) -> str: ...

    @property
    def thread_ts(self) -> str | None: ...

    @property
    def user(self) -> str: ...

    @property
    def team(self) -> str: ...


class StreamedReply:
    def __init__(self, client: AsyncWebClient, q: StreamTarget, enabled: bool) -> None:
        self.client = client
        self.q = q
        self.enabled = enabled
        self._stream: AsyncChatStream | None = None
        self._broken = False

    @property
    def started(self) -> bool:
        """A streamed message exists in the thread."""
        return self._stream is not None and self._stream.ts is not None

    async def on_text(self, delta: str) -> None:
        """A piece of the answer's checked text, as it arrives (the engine's callback)."""
        if self._broken or not delta:
            return
        if self._stream is None:
            self._stream = await self.client.chat_stream(
                channel=self.q.channel, thread_ts=self.q.thread_ts or "", buffer_size=_BUFFER_CHARS,
                recipient_user_id=self.q.user, recipient_team_id=self.q.team or None,
            )
        try:
            await self._stream.append(markdown_text=blocks.escape(delta))
        except _ERRORS as exc:
            log.warning("streaming into %s failed (%s): the answer is posted whole", self.q.channel, exc)
            self._broken = True
            await self.abandon()

    async def finish(self, message: dict[str, Any]) -> str | None:
        """Stop the stream with the sources and feedback controls, then give the message its final
        form `message` (the checked answer, or the abstention). The message's ts, or None if that failed
        (the streamed message is then removed and the caller posts the answer its usual way)."""
        assert self._stream is not None and self._stream.ts is not None
        ts = self._stream.ts
        try:
            await self._stream.stop(blocks=blocks.after_text(message))
            await self.client.chat_update(channel=self.q.channel, ts=ts, **message)
        except _ERRORS as exc:
            log.warning("ending the stream in %s failed (%s)", self.q.channel, exc)
            await self.abandon()
            return None
        return ts

    async def abandon(self) -> None:
        """Remove a streamed message that will not be completed (the answer goes another way)."""
        if not self.started:
            self._stream = None
            return
        assert self._stream is not None and self._stream.ts is not None
        ts = self._stream.ts
        self._stream = None
        try:
            await self.client.chat_delete(channel=self.q.channel, ts=ts)
        except _ERRORS as exc:
            log.warning("could not remove the streamed message in %s (%s)", self.q.channel, exc)
