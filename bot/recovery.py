"""Placeholders left behind by a process that died (`kill -9`, out of memory, a lost host): no
drain edited them, so without this the thread says "Looking through the docs…" forever.

Every replica (a restarted one too) renews the leases of its own open placeholders and, on start
and every few seconds, ends the orphans whose owner stopped renewing them: each becomes a
one-line note with an "Ask again" button, claimed in the state database first so that of any
number of replicas exactly one edits it. The button asks the recorded question again, for its
asker only, at the level the asker and the conversation allow then (`Answerer`)."""
from __future__ import annotations

import logging
import os
import socket
import uuid
from contextlib import AbstractAsyncContextManager

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks, telemetry
from bot.answering import Answerer, Question
from bot.notes import Tell
from bot.work import every
from state.db import StateUnavailable
from state.file_watch import FileWatch
from state.placeholders import Orphan, PlaceholderJournal

log = logging.getLogger(__name__)

# An owner renews every LEASE_S / 3; its orphans are ended LEASE_S after it died and within one
# more SWEEP_EVERY_S: well within a minute, and a slow answer (a minute of model time) is never
# mistaken for an orphan while its process lives.
LEASE_S = 15.0
SWEEP_EVERY_S = 5.0
KEEP_QUESTION_S = 7 * 24 * 3600.0  # how long "Ask again" works
ORPHANED = "I was restarted before I could answer, sorry."
ASKED_AGAIN = "<@{user}> asked again."
GONE = "That question was already asked again, or it has expired: please ask it again."


def owner_id() -> str:
    """This process among all replicas: a restarted process is a new owner."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class Recovery:
    def __init__(self, client: AsyncWebClient, journal: PlaceholderJournal) -> None:
        self.client = client
        self.journal = journal

    async def sweep(self) -> int:
        """Renew this process's leases, then end every orphan this process claims; how many."""
        await self.journal.renew()
        ended = 0
        for orphan in await self.journal.orphans():
            if await self.journal.claim(orphan.answer_id):
                await self._end(orphan)
                ended += 1
        return ended

    async def _end(self, orphan: Orphan) -> None:
        telemetry.failed(orphan.surface, "orphaned", orphan.answer_id)
        try:
            await self.client.chat_update(channel=orphan.channel, ts=orphan.ts, **blocks.orphaned(ORPHANED,
                                                                                                 orphan.answer_id))
        except SlackApiError as exc:  # deleted meanwhile, or no longer ours to edit: nothing to end
            log.warning("orphaned placeholder in %s not ended: %s", orphan.channel, exc.response.get("error"))
        except (aiohttp.ClientError, TimeoutError) as exc:  # Slack unreachable: its lease expires, then again
            log.warning("orphaned placeholder in %s not ended yet: %s", orphan.channel, type(exc).__name__)
            return
        await self.journal.ended(orphan.answer_id, KEEP_QUESTION_S)

    async def ask_again(self, answerer: Answerer, user: str, answer_id: str, tell: Tell) -> None:
        """The button: the recorded question, asked again by its asker in its thread."""
        try:
            orphan = await self.journal.take(answer_id, user)
        except StateUnavailable as exc:
            log.warning("ask-again %s not looked up: %s", answer_id, exc)
            await tell("I couldn't look that question up just now, please try again.")
            return
        if orphan is None:
            await tell(GONE)
            return
        try:
            await self.client.chat_update(channel=orphan.channel, ts=orphan.ts,
                                          **blocks.notice(ASKED_AGAIN.format(user=user)))
        except SlackApiError as exc:
            log.warning("could not mark the note in %s asked again: %s", orphan.channel, exc.response.get("error"))
        await answerer.answer_in_conversation(Question(orphan.question, user, orphan.channel, orphan.thread_ts), tell)


def recovering(recovery: Recovery, state_file: FileWatch | None = None, every_s: float = SWEEP_EVERY_S
               ) -> AbstractAsyncContextManager[None]:
    """Sweep at once and then every `every_s`, in the background, while the body runs; first, see
    that the state file is still there (restored if it was deleted: bot.health reports it too)."""

    async def step() -> None:
        try:
            if state_file is not None:
                await state_file.check()
            if ended := await recovery.sweep():
                log.info("ended %d placeholder(s) left by a stopped process", ended)
        except StateUnavailable as exc:
            log.warning("orphaned placeholders not checked: %s", exc)

    return every(every_s, step, "recovery")
