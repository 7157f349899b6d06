"""From a question in a conversation to an answer posted there, at the level its readers allow.

The level is min(asker, audience): a DM is read by the asker alone; any other conversation by
everyone in it (see `bot.directory`). When the asker could see more than the audience, they get
a private offer to be answered in a DM at their own level.
"""
from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks, telemetry
from bot.directory import Audience, Directory
from bot.limits import AnswerSlots
from bot.placeholders import Placeholders
from rag.answer import Answer
from rag.engine import Engine
from rag.levels import Level
from state.answers import AnswerLog
from state.db import StateUnavailable
from state.ratelimit import RateLimit

log = logging.getLogger(__name__)

History = list[tuple[str, str]]
Tell = Callable[[str], Awaitable[None]]  # a private note to the asker
Reply = Callable[[dict[str, Any]], Awaitable[Any]]  # a whole message only the asker sees

BUSY = "I'm answering a lot of questions right now. Please ask again in a minute."
FAILED = "Sorry, something went wrong on my side while answering. Please try again."
NOT_IN_CHANNEL_ERRORS = {"not_in_channel", "channel_not_found"}
# Abstentions a DM at the asker's own level could turn into an answer.
_LEVEL_BOUND = {"no_access", "no_match", "declined"}
_HISTORY_MESSAGES = 12
_HISTORY_CHARS = 1000


class NotInChannel(RuntimeError):
    """The bot cannot post in this conversation (not invited, or a DM between other people)."""


@dataclass(frozen=True)
class Question:
    text: str
    user: str
    channel: str
    thread_ts: str | None  # root of the thread the answer goes in; None: top level (a DM)
    history: History = field(default_factory=list)


class Answerer:
    def __init__(
        self,
        client: AsyncWebClient,
        engine: Engine,
        directory: Directory,
        answer_log: AnswerLog,
        rate: RateLimit,
        slots: AnswerSlots,
    ) -> None:
        self.client = client
        self.engine = engine
        self.directory = directory
        self.answer_log = answer_log
        self.rate = rate
        self.slots = slots
        self.placeholders = Placeholders()  # posted, not yet replaced (bot.serve edits them on shutdown)

    # -- delivering answers ------------------------------------------------------------------------
    async def answer_in_conversation(
        self, q: Question, tell: Tell, announce: dict[str, Any] | None = None, private: Reply | None = None
    ) -> None:
        """Post a placeholder in the thread and replace it with the answer.

        `announce` is first posted at the top level and the answer goes in its thread (for
        `/docs`). When the bot may not post in the conversation, the answer goes to `private`
        (seen by the asker alone, so at the asker's level) or NotInChannel is raised."""
        asker = await self.directory.user_level(q.user)
        if asker is None:
            return
        surface = telemetry.surface_of(q.channel, announce is not None)
        telemetry.question_started(surface, q.user, q.channel, q.text)
        audience = await self.directory.audience(q.channel)
        level = audience.cap(asker)
        if not await self._admitted(q.user, tell):
            telemetry.failed(surface, "rate_limited")
            return
        async with self.slots.take() as free:
            if not free:
                telemetry.rejected_busy(surface)
                await tell(BUSY)
                return
            try:
                if announce is not None:
                    q = replace(q, thread_ts=await self.post(q.channel, None, announce))
                placeholder = await self.post(q.channel, q.thread_ts, blocks.notice(blocks.THINKING))
                self.placeholders.open(q.channel, placeholder, surface)
            except NotInChannel:
                if private is None:
                    raise
                answer, answer_id = await self._ask(q, asker, asker)
                await private(blocks.answer_message(answer, answer_id))
                telemetry.answered(surface, answer, "")
                await self._log(q, answer, answer_id, asker, asker, "")
                return
            except SlackApiError as exc:
                log.warning("cannot post in %s: %s", q.channel, exc.response.get("error"))
                await tell(FAILED)
                return
            try:
                audience_level = asker if audience.direct else audience.level
                answer, answer_id = await self._ask(q, asker, audience_level)
                await self._update(q.channel, placeholder, blocks.answer_message(answer, answer_id))
                self.placeholders.close(q.channel, placeholder)
            except Exception:
                log.exception("answering in %s failed", q.channel)
                telemetry.failed(surface, "error")
                await self._update(q.channel, placeholder, blocks.notice(FAILED))
                self.placeholders.close(q.channel, placeholder)
                return
        telemetry.answered(surface, answer, placeholder)
        await self._log(q, answer, answer_id, asker, audience_level, placeholder)  # posted first, then recorded
        could_use_more = not answer.answered and answer.abstain_reason in _LEVEL_BOUND
        if asker > level and (could_use_more or answer.diagnostics.blocked):
            await self._offer_dm(q, answer_id, audience)

    async def answer_in_dm(self, user: str, answer_id: str, tell: Tell) -> None:
        """The DM offer was accepted: answer the recorded question again in a DM with the asker."""
        try:
            record = await self.answer_log.get(answer_id)
        except StateUnavailable as exc:
            log.warning("DM offer %s not looked up: %s", answer_id, exc)
            await tell("I couldn't look that question up just now, please try again.")
            return
        if record is None or record.asker != user:
            await tell("That offer has expired. Send me the question in a direct message instead.")
            return
        opened = await self.client.conversations_open(users=user)
        channel = opened["channel"]["id"]
        history = [(turn["speaker"], turn["text"]) for turn in record.history]
        q = Question(record.question, user, channel, None, history)
        await self.answer_in_conversation(q, lambda text: self._post_plain(channel, text))

    # -- steps -----------------------------------------------------------------------------------
    async def _admitted(self, user: str, tell: Tell) -> bool:
        """The per-user limit, shared by all replicas; it fails open when the state database is
        unreachable (a question is never dropped for want of a counter)."""
        try:
            wait = await self.rate.take(user)
        except StateUnavailable as exc:
            log.warning("rate limit not checked for %s: %s", user, exc)
            return True
        if wait:
            await tell(f"You've asked {self.rate.per_minute} questions in the last minute. "
                       f"Please wait {max(1, round(wait))} seconds and ask again.")
        return not wait

    async def _ask(self, q: Question, asker: Level, audience: Level) -> tuple[Answer, str]:
        """Answer at min(asker, audience). Recording it is the caller's, once it is posted (`_log`)."""
        level = min(asker, audience)
        answer = await self.engine.ask(q.text, level, q.history)
        return answer, telemetry.answer_id()

    async def _log(self, q: Question, answer: Answer, answer_id: str, asker: Level, audience: Level, ts: str) -> None:
        """A failed write is logged and the answer still posted: feedback on it is then refused."""
        try:
            index_commit = (await asyncio.to_thread(self.engine.store.meta)).get("commit") or ""
            await self.answer_log.record(
                answer, asker=q.user, asker_level=asker.name, audience_level=audience.name, channel=q.channel,
                message_ts=ts, thread_ts=q.thread_ts, history=q.history, index_commit=index_commit,
                answer_id=answer_id,
            )
        except StateUnavailable as exc:
            log.warning("could not log answer %s: %s", answer_id, exc)
        except Exception:
            log.exception("could not log answer %s", answer_id)

    async def _offer_dm(self, q: Question, answer_id: str, audience: Audience) -> None:
        reason = f"This is {audience.reason}: not everyone here may read all the docs you can."
        try:
            await self.client.chat_postEphemeral(
                channel=q.channel, user=q.user, thread_ts=q.thread_ts, **blocks.dm_offer(answer_id, reason)
            )
        except SlackApiError as exc:
            log.warning("could not send the DM offer in %s: %s", q.channel, exc.response.get("error"))

    # -- Web API helpers -------------------------------------------------------------------------
    async def post(self, channel: str, thread_ts: str | None, message: dict[str, Any]) -> str:
        try:
            response = await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message)
        except SlackApiError as exc:
            if exc.response.get("error") in NOT_IN_CHANNEL_ERRORS:
                raise NotInChannel(exc.response.get("error")) from None
            raise
        return response["ts"]

    async def _post_plain(self, channel: str, text: str) -> None:
        await self.post(channel, None, blocks.notice(text))

    async def _update(self, channel: str, ts: str, message: dict[str, Any]) -> None:
        with telemetry.posting():
            await self.client.chat_update(channel=channel, ts=ts, **message)


def question_text(slack_text: str, bot_user_id: str | None) -> str:
    """The question in a message: without the bot's mention, Slack's escapes undone."""
    if bot_user_id:
        slack_text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", slack_text)
    return " ".join(slack_text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&").split())


async def thread_history(
    client: AsyncWebClient, channel: str, thread_ts: str, before_ts: str, bot_user_id: str | None
) -> History:
    """The thread's earlier messages as (speaker, text): untrusted context for a follow-up.

    A failed lookup gives no history (the question is answered on its own)."""
    try:
        response = await client.conversations_replies(channel=channel, ts=thread_ts, limit=100)
    except SlackApiError as exc:
        log.warning("conversations.replies %s failed: %s", channel, exc.response.get("error"))
        return []
    history: History = []
    for message in response.get("messages", []):
        if float(message.get("ts", 0)) >= float(before_ts):
            continue
        is_bot = bool(message.get("bot_id")) or (bot_user_id is not None and message.get("user") == bot_user_id)
        if is_bot and message.get("text") == blocks.THINKING:
            continue
        if text := question_text(message.get("text", ""), bot_user_id):
            history.append(("agent" if is_bot else "user", text[:_HISTORY_CHARS]))
    return history[-_HISTORY_MESSAGES:]
