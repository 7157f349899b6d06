"""From a question in a conversation to an answer posted there, at the level its readers allow.

The level is min(asker, audience): a DM is read by the asker alone; any other conversation by
everyone in it (see `bot.directory`). When the asker could see more than the audience, they get
a private offer to be answered in a DM at their own level. The audience is looked up again
before the answer is shown (when its stream starts, and before it is posted): one that dropped
while it was searched or written (a guest joined) gets the question answered again at its level.

Past the per-person rate limit, a question waits in line for an answer slot (`bot.queue`); its
placeholder is posted when it enters the line or gets its slot, shows its place, and is ended
exactly once: by the answer (streamed into its own message when the model streams), an
abstention, a busy or failure note, or, when Slack refuses the update, by deleting it and
telling the asker privately.

Under Slack's rate limits (bot.ratelimits) progress in the placeholder is best-effort
(bot.progress) and nothing waits for Slack inside an answer slot: the answer is posted after
the slot is freed, waiting its turn and Slack's Retry-After within a budget, as a new message
when the placeholder cannot be edited, and the asker is told when to ask again otherwise.
"""
from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks, surfaces, telemetry
from bot.conversation import History, ThreadUnreadable
from bot.directory import Audience, Directory
from bot.queue import AnswerQueue
from bot.notes import Reply, Tell, ephemeral, in_conversation
from bot.placeholders import Placeholder, Placeholders
from bot.plan import Plan, with_plan
from bot.progress import Progress
from bot.ratelimits import Budget, Lanes, RateLimited, own_retries
from bot.streaming import StreamedReply
from bot.surfaces import Surface
from rag import Answer, Engine, Level, StepSink, TextSink
from rag.site_links import site_pages
from state.answers import AnswerLog
from state.db import StateUnavailable
from state.placeholders import PlaceholderJournal
from state.threads import Posted, ThreadRecord
from state.ratelimit import RateLimit

log = logging.getLogger(__name__)

BUSY = "I'm answering a lot of questions right now. Please ask again in a minute."
FAILED = "Sorry, something went wrong on my side while answering. Please try again."
NOT_POSTED = "I couldn't post my answer in this conversation ({error}). Please ask again."
RATE_LIMITED = "Slack is limiting how fast I can post here, so I couldn't post my answer. Please ask again in {when}."
NO_DM = "I couldn't open a direct message with you ({error}), so I can't answer there."
TOO_LONG = ("Your question is {length:,} characters long; I answer questions of up to {limit:,} characters. "
            "Please shorten it and ask again.")
THREAD_UNREAD = ("I couldn't read this thread just now, so I can't tell whether that was for me. "
                 "Mention me in it to ask again.")
NOT_IN_CHANNEL_ERRORS = {"not_in_channel", "channel_not_found"}
# Abstentions a DM at the asker's own level could turn into an answer.
_LEVEL_BOUND = {"no_access", "no_match", "declined"}
PANEL = Audience(Level.restricted, direct=True, reason="the assistant panel")  # read by the asker alone


# Reads the thread a question was asked in: its earlier turns, or None when the thread shows the
# message was not for the bot (a follow-up that answers someone else); ThreadUnreadable when that
# is unknown.
ThreadReader = Callable[[], Awaitable[History | None]]


class NotInChannel(RuntimeError):
    """The bot cannot post in this conversation (not invited, or a DM between other people)."""


@dataclass(frozen=True)
class Question:
    text: str
    user: str
    channel: str
    thread_ts: str | None  # root of the thread the answer goes in; None: top level (a DM)
    history: History = field(default_factory=list)
    team: str = ""  # the asker's workspace (a streamed reply names its recipient)
    # The channel the asker looks at in docsbot's agent view (bot/agent_view.py): the answer, in
    # their DM, is for that channel's readers and scope. "": the conversation's own.
    viewing: str = ""

    @property
    def readers(self) -> str:
        """The conversation whose readers (and scope) the answer is for."""
        return self.viewing or self.channel


class Answerer:
    def __init__(
        self,
        client: AsyncWebClient,
        engine: Engine,
        directory: Directory,
        answer_log: AnswerLog,
        rate: RateLimit,
        queue: AnswerQueue,
        stream_replies: bool = True,
        journal: PlaceholderJournal | None = None,
        threads: ThreadRecord | None = None,
    ) -> None:
        self.client = client
        self.engine = engine
        self.directory = directory
        self.answer_log = answer_log
        self.rate = rate
        self.queue = queue
        self.stream_replies = stream_replies
        # posted, not yet ended (bot.serve ends them on shutdown, bot.recovery after a crash)
        self.placeholders = Placeholders(journal)
        self.lanes = Lanes()  # what Slack said about its rate limits, per bucket
        self.progress = Progress(client, self.lanes, self.placeholders)
        # docsbot's record of its threads: its announcements and answers are recorded there
        self.threads = threads if threads is not None else ThreadRecord(answer_log.db, answer_log.retention_days)
        self.bot_user_id: str | None = None  # this bot's user (auth.test's), learnt from Bolt (bot.middleware)

    # -- delivering answers ------------------------------------------------------------------------
    async def answer_in_conversation(self, q: Question, tell: Tell, way_in: Surface | None = None,
                                     thread: ThreadReader | None = None) -> None:
        """Answer in the conversation, waiting in line for an answer slot if need be. `thread`
        gives `q` its history once the asker is within the rate limit: a person past it makes
        the bot read no thread from Slack (nor drop a message it is not for).

        What the way in (`bot.surfaces`; by default a mention or a DM, from the channel) changes:
        its `announce` is first posted at the top level and the answer goes in its thread (for
        `/docs`); when the bot may not post in the conversation, the answer goes to its `private`
        reply (seen by the asker alone, so at the asker's level) or NotInChannel is raised; read
        by the asker alone (the assistant panel), the status line (not a placeholder) says what
        happens until the answer or a place in line is posted, and the answer carries Slack's
        native feedback buttons."""
        way_in = way_in or surfaces.conversation(q.channel)
        surface, panel = way_in.name, way_in.asker_alone
        if len(q.text) > blocks.QUESTION_LIMIT:  # before anything is posted, logged or searched
            telemetry.failed(surface, "too_long")
            await tell(TOO_LONG.format(length=len(q.text), limit=blocks.QUESTION_LIMIT))
            return
        telemetry.question_started(surface, q.user, q.channel, q.text)
        try:
            levels = await self._levels(q, tell, surface, panel)
        except Exception:  # a state error that is no outage (StateUnavailable is handled in each step): a bug
            log.exception("answering in %s failed before the answer", q.channel)
            telemetry.failed(surface, "error")
            await tell(FAILED)
            return
        if levels is None:
            return
        asker, audience = levels
        if thread is not None:
            try:
                history = await thread()
            except ThreadUnreadable as exc:  # never dropped unsaid: its asker may ask again
                log.warning("a message in a thread of %s was not answered: the thread could not be read", exc)
                telemetry.failed(surface, "thread_unread")
                await tell(THREAD_UNREAD)
                return
            if history is None:
                log.info("not a question to the bot after all (the thread shows it answers someone else)")
                return
            q = replace(q, history=history)
        try:
            if way_in.announce is not None:
                root = await self.post(q.channel, None, way_in.announce)
                q = replace(q, thread_ts=root)
                await self._record(q.channel, root, root, way_in.announce["text"], start=True)
            placeholder = Placeholder(q.channel, q.thread_ts, surface, asker=q.user, question=q.text)
            answered = await self._answer_into(placeholder, q, asker, audience, tell, panel)
        except NotInChannel:
            if way_in.private is None:
                raise
            await self._answer_privately(q, asker, way_in.private, tell, surface)
            return
        except SlackApiError as exc:
            log.warning("cannot post in %s: %s", q.channel, exc.response.get("error"))
            await tell(FAILED)
            return
        if answered is None:
            return
        answer, answer_id, audience = answered
        could_use_more = not answer.answered and answer.abstain_reason in _LEVEL_BOUND
        if asker > audience.cap(asker) and (could_use_more or answer.diagnostics.blocked):
            await self._offer_dm(q, answer_id, audience)

    async def _answer_into(
        self, placeholder: Placeholder, q: Question, asker: Level, audience: Audience, tell: Tell, panel: bool
    ) -> tuple[Answer, str, Audience] | None:
        """Take a place in line (the placeholder is posted then, showing it, and follows it), answer,
        end the placeholder. A full line is told privately, with nothing posted.

        The answer streams into its own message when the model streams; the placeholder is then
        deleted. Returns the answer, its id and the audience it was given for; None when the asker
        got no answer (busy, or a failure note). NotInChannel (and a failure to post the first
        placeholder) is raised: nothing was posted then."""
        try:
            return await self._answer_in_turn(placeholder, q, asker, audience, tell, panel)
        finally:
            self.progress.forget(placeholder)  # whatever happened (a cancelled answer too): no more progress

    async def _answer_in_turn(
        self, placeholder: Placeholder, q: Question, asker: Level, audience: Audience, tell: Tell, panel: bool
    ) -> tuple[Answer, str, Audience] | None:
        stream = StreamedReply(self.client, q, self._can_stream(q))
        plan = Plan(lambda message, key: self.progress.show_message(placeholder, message, key))
        try:
            async with self.queue.turn(q.user, lambda ahead: self._show(placeholder, blocks.in_line(ahead))) as turn:
                if not turn.admitted:
                    log.info("queue %s after %.1f s: told %s busy", turn.refused, turn.waited_s, q.user)
                    telemetry.rejected_busy(placeholder.surface)
                    await self.progress.end(placeholder)
                    if placeholder.ts is None:
                        await tell(BUSY)
                    else:
                        await self._end(placeholder, blocks.notice(BUSY), tell)
                    return None
                telemetry.waited_in_line(turn.waited_s)
                if not panel or placeholder.ts is not None:
                    await self._show(placeholder, blocks.THINKING)
                    plan.start()  # a slow answer shows its steps there (bot/plan.py)
                else:
                    self.progress.forget(placeholder)  # the status line says it now: no place in line is posted
                with own_retries():  # a streamed reply never sleeps on Slack's Retry-After in the slot
                    answer, audience = await self._ask_for_readers(q, asker, audience, stream, plan)
        except Exception as exc:
            if placeholder.ts is None and isinstance(exc, (NotInChannel, SlackApiError)):
                raise  # nothing was posted: the caller answers privately or tells the asker
            log.exception("answering in %s failed", q.channel)
            telemetry.failed(placeholder.surface, "error")
            await self._fail(placeholder, stream, tell)
            return None
        finally:
            plan.stop()
        audience_level = asker if audience.direct else audience.level
        answer_id = telemetry.answer_id()
        message = with_plan(blocks.answer_message(answer, answer_id, native_feedback=panel,
                                                  pages=site_pages(self.engine.config.links)), plan.finished())
        if q.viewing:
            message = blocks.answered_for(message, q.viewing)
        ts = await stream.finish(message) if stream.started else None
        if ts is not None:
            await self._end(placeholder, None, tell)
        else:
            ts = await self._end(placeholder, message, tell)
        if ts is not None:
            telemetry.answered(placeholder.surface, answer, ts)
            # posted, then logged
            await self._log(q, answer, answer_id, asker, audience_level, ts, audience.public_channel)
            await self._record(q.channel, q.thread_ts, ts, message["text"])
        else:
            telemetry.failed(placeholder.surface, "error")
        return answer, answer_id, audience

    async def _ask_for_readers(
        self, q: Question, asker: Level, audience: Audience, stream: StreamedReply, plan: Plan,
    ) -> tuple[Answer, Audience]:
        """The answer at the level the conversation's readers allow once it is written, and that
        audience. Before anything of it is shown the audience is looked up again (what any replica
        heard meanwhile: a guest who joined while it was searched or written): before its stream
        starts, and before it is posted. One that dropped below the answer's level gets the question
        answered again at its own, and what was streamed of the first answer is deleted. Each round
        lowers the level, so this ends."""
        while True:
            level = audience.cap(asker)
            answer = await self._ask(q, level, self._sink(q, asker, audience, stream), asker, plan.on_step)
            if audience.direct:
                return answer, audience
            now = await self._audience_now(q, asker)
            if now.cap(asker) >= level:
                return answer, audience
            log.info("the audience in %s dropped to %s while answering: answered again", q.channel, now.level.name)
            await stream.abandon()
            plan.restart()
            audience = now

    def _sink(self, q: Question, asker: Level, audience: Audience, stream: StreamedReply) -> TextSink | None:
        """Where the answer's text streams (None: it is not streamed). Where others read it, the
        audience is looked up again before the first text is shown, and none is shown when it
        dropped below the answer's level (the answer is then given again at the new one)."""
        if not stream.enabled or audience.direct:
            return stream.on_text if stream.enabled else None
        level = audience.cap(asker)
        allowed: bool | None = None

        async def on_text(delta: str) -> None:
            nonlocal allowed
            if allowed is None:
                allowed = (await self._audience_now(q, asker)).cap(asker) >= level
            if allowed:
                await stream.on_text(delta)

        return on_text

    async def _audience_now(self, q: Question, asker: Level) -> Audience:
        await self.directory.follow_changes()
        return await self.directory.audience(q.readers, asker)

    async def _fail(self, placeholder: Placeholder, stream: StreamedReply, tell: Tell) -> None:
        await stream.abandon()
        await self._end(placeholder, blocks.notice(FAILED), tell)

    async def _answer_privately(self, q: Question, asker: Level, private: Reply, tell: Tell, surface: str) -> None:
        """The bot may not post here: answer the asker alone (so at their own level)."""
        async with self.queue.turn(q.user) as turn:
            if not turn.admitted:
                telemetry.rejected_busy(surface)
                await tell(BUSY)
                return
            answer = await self._ask(q, asker, None)
        answer_id = telemetry.answer_id()
        await private(blocks.answer_message(answer, answer_id, pages=site_pages(self.engine.config.links)))
        telemetry.answered(surface, answer, "")
        await self._log(q, answer, answer_id, asker, asker, "")

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
        try:
            opened = await self.client.conversations_open(users=user)
        except SlackApiError as exc:
            log.warning("conversations.open for %s failed: %s", user, exc.response.get("error"))
            await tell(NO_DM.format(error=exc.response.get("error", "error")))
            return
        channel = opened["channel"]["id"]
        history = [(turn["speaker"], turn["text"]) for turn in record.history]
        q = Question(record.question, user, channel, None, history)
        await self.answer_in_conversation(q, in_conversation(self.client, channel).tell)

    # -- steps -----------------------------------------------------------------------------------
    async def _levels(self, q: Question, tell: Tell, surface: str, panel: bool) -> tuple[Level, Audience] | None:
        """(asker, audience) of an admitted question from a person; None when it is past the rate
        limit (the asker was told) or not from a person."""
        admitted, state_up = await self._admitted(q.user, tell)
        if not admitted:
            telemetry.failed(surface, "rate_limited")
            return None
        # What another replica heard of, before any cached level is used (not read again from a
        # state database the rate limit just found unreachable: no cached audience is trusted then).
        await self.directory.follow_changes(readable=state_up)
        asker = await self.directory.user_level(q.user)
        if asker is None:
            return None
        return asker, PANEL if panel else await self.directory.audience(q.readers, asker)

    async def _admitted(self, user: str, tell: Tell) -> tuple[bool, bool]:
        """(admitted, whether the state database answered): the per-user limit, shared by all
        replicas; it fails open when the state database is unreachable (a question is never
        dropped for want of a counter)."""
        try:
            wait = await self.rate.take(user)
        except StateUnavailable as exc:
            log.warning("rate limit not checked for %s: %s", user, exc)
            return True, False
        if wait:
            await tell(f"You've asked {self.rate.per_minute} questions in the last minute. "
                       f"Please wait {max(1, round(wait))} seconds and ask again.")
        return not wait, True

    def _can_stream(self, q: Question) -> bool:
        """Streams are replies in a thread; elsewhere (a DM's top level) the placeholder is updated."""
        return self.stream_replies and q.thread_ts is not None

    async def _ask(self, q: Question, level: Level, on_text: TextSink | None, asker: Level | None = None,
                   on_step: StepSink | None = None) -> Answer:
        """The engine's answer at `level`, from the docs in the asker's language (their Slack
        locale, cached with their level) where a page has it, else in the docs' default. `asker`:
        the asker's level, when the conversation's is lower (what decides the DM offer is counted
        up to it: rag/engine.py)."""
        language = await self.directory.user_language(q.user)
        scope = self.directory.policy.rules(q.readers).scope  # a channel's part of the docs (bot/channel_rules.py)
        answer = await self.engine.ask(q.text, level, q.history, on_text=on_text, language=language, scope=scope,
                                       asker=asker, on_step=on_step)
        if answer.abstain_reason:
            log.info("abstained (%s): %s", answer.abstain_reason, answer.detail)
        return answer

    async def _log(self, q: Question, answer: Answer, answer_id: str, asker: Level, audience: Level, ts: str,
                   public_channel: bool = False) -> None:
        """A failed write is logged and the answer still posted: feedback on it is then refused.
        `public_channel`: asked where the whole workspace may read it (the only questions that
        may ever be suggested to someone else)."""
        try:
            await self.answer_log.record(
                answer, asker=q.user, asker_level=asker.name, audience_level=audience.name, channel=q.channel,
                message_ts=ts, thread_ts=q.thread_ts, history=q.history, index_commit=answer.index_commit,
                # asked in a DM, whatever channel its asker viewed: never public
                answer_id=answer_id, public_channel=public_channel and not q.viewing,
            )
        except StateUnavailable as exc:
            log.warning("could not log answer %s: %s", answer_id, exc)
        except Exception:
            log.exception("could not log answer %s", answer_id)

    async def _record(self, channel: str, thread_ts: str | None, ts: str, text: str, start: bool = False) -> None:
        """What docsbot posted in a thread, in its record of the thread (when it keeps one, or
        `start`s it: the root of a `/docs` question's thread)."""
        if thread_ts is None:
            return
        try:
            if self.bot_user_id is None:
                self.bot_user_id = (await self.client.auth_test())["user_id"]
            posted = Posted(ts, self.bot_user_id or "", text)
            if start:
                await self.threads.start(channel, thread_ts, [posted])
            else:
                await self.threads.note(channel, thread_ts, posted)
        except (StateUnavailable, SlackApiError) as exc:
            log.warning("docsbot's message in %s was not recorded in its thread: %s", channel, exc)

    async def _offer_dm(self, q: Question, answer_id: str, audience: Audience) -> None:
        reason = (f"I answered for <#{q.viewing}>, the channel you're looking at: not everyone there may read all "
                  "the docs you can." if q.viewing else
                  f"This is {audience.reason}: not everyone here may read all the docs you can.")
        await ephemeral(self.client, q.channel, q.user, q.thread_ts).reply(blocks.dm_offer(answer_id, reason))

    # -- the placeholder: shown (posted, then updated) and ended in one place each -----------------
    async def _show(self, placeholder: Placeholder, text: str) -> None:
        """Show `text` in the placeholder. The first time it is posted at once (a refusal is raised:
        nothing is posted then) unless Slack is rate-limiting the channel; from then on it is left to
        `bot.progress`, best-effort, and never waited for."""
        first = not placeholder.tried
        placeholder.tried = True
        channel = placeholder.channel
        if first:
            ts = await self.lanes.attempt("chat.postMessage", channel,
                                          lambda: self.post(channel, placeholder.thread_ts, blocks.notice(text)))
            if ts is not None:
                placeholder.ts, placeholder.shown = ts, text
                self.placeholders.open(placeholder)
                return
        self.progress.show(placeholder, text)

    async def _end(self, placeholder: Placeholder, message: dict[str, Any] | None, tell: Tell) -> str | None:
        """Turn the placeholder into `message` (or delete it: None), whatever happens.

        Returns the ts of the final message, None when none could be posted: the placeholder is
        then deleted and the asker told privately (with when to ask again, when Slack is
        rate-limiting), so "Looking through the docs…" never stays forever."""
        await self.progress.end(placeholder)
        opened = placeholder.ts
        try:
            if message is None:
                await self._delete(placeholder)
                return None
            try:
                return await self._deliver(placeholder, message)
            except RateLimited as exc:
                log.warning("could not post the reply in %s: %s", placeholder.channel, exc)
                await tell(RATE_LIMITED.format(when=_minutes(exc.retry_after)))
            except (SlackApiError, NotInChannel) as exc:
                error = exc.response.get("error", "error") if isinstance(exc, SlackApiError) else str(exc)
                log.warning("could not post the reply in %s: %s", placeholder.channel, error)
                await tell(NOT_POSTED.format(error=error))
            await self._delete(placeholder)
            return None
        finally:
            if opened is not None:  # ended, whatever happened: nothing for a restart to clean up
                self.placeholders.close(placeholder.channel, opened)

    async def _deliver(self, placeholder: Placeholder, message: dict[str, Any]) -> str:
        """Post the final message: the placeholder edited into it or, with no placeholder or when
        Slack will not allow the edit within the budget, a new message (the placeholder then goes).
        Each call waits its turn and Slack's Retry-After within one budget: RateLimited past it."""
        budget = Budget()
        channel, ts = placeholder.channel, placeholder.ts
        if ts is not None:
            try:
                await self.lanes.send("chat.update", channel, lambda: self._update(channel, ts, message), budget)
                return ts
            except RateLimited as exc:
                log.info("%s: the answer in %s is posted as a new message", exc, channel)
        posted = await self.lanes.send("chat.postMessage", channel,
                                       lambda: self.post(channel, placeholder.thread_ts, message), budget)
        await self._delete(placeholder)
        return posted

    async def _delete(self, placeholder: Placeholder) -> None:
        if placeholder.ts is None:
            return
        channel, ts = placeholder.channel, placeholder.ts
        try:
            await self.lanes.send("chat.delete", channel, lambda: self.client.chat_delete(channel=channel, ts=ts),
                                  Budget())
        except (SlackApiError, RateLimited) as exc:
            log.warning("could not delete the placeholder in %s: %s", channel,
                        exc.response.get("error") if isinstance(exc, SlackApiError) else exc)
        placeholder.ts = None

    # -- Web API helpers -------------------------------------------------------------------------
    async def post(self, channel: str, thread_ts: str | None, message: dict[str, Any]) -> str:
        try:
            response = await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, **message)
        except SlackApiError as exc:
            if exc.response.get("error") in NOT_IN_CHANNEL_ERRORS:
                raise NotInChannel(exc.response.get("error")) from None
            raise
        return response["ts"]

    async def _update(self, channel: str, ts: str, message: dict[str, Any]) -> None:
        with telemetry.posting():
            await self.client.chat_update(channel=channel, ts=ts, **message)


def _minutes(seconds: float) -> str:
    minutes = math.ceil(seconds / 60)
    return "a minute" if minutes <= 1 else f"about {minutes} minutes"
