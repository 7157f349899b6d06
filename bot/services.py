"""What listeners need, attached to every Bolt request's context by one middleware."""
from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from slack_bolt.context.async_context import AsyncBoltContext

from bot.access import AccessFile, AccessPolicy
from bot.answering import Answerer
from bot.recovery import Recovery
from bot.unfurls import Unfurler
from bot.work import BackgroundWork, every
from foundation.settings import Settings
from rag import Engine
from state.agent_views import AgentViews
from state.answers import AnswerLog
from state.db import StateUnavailable
from state.dedupe import Dedupe
from state.file_watch import FileWatch
from state.threads import ThreadRecord
from state.tokens import McpTokens

log = logging.getLogger(__name__)

SyncCommand = Callable[[], Awaitable[str]]  # requests a docs sync, returns what to tell the admin
HOUSEKEEPING_EVERY_S = 3600.0
REPLAY_WINDOW_S = 600.0  # a signature is good for 5 minutes either side of its timestamp (bot.app)


@dataclass
class Services:
    settings: Settings
    engine: Engine
    access: AccessFile
    answerer: Answerer
    answer_log: AnswerLog
    work: BackgroundWork
    # Shared by every replica: event ids and messages already taken by one of them.
    dedupe: Dedupe
    status: Callable[[bool], Awaitable[str]]  # `/docs status`; True: with the details admins see
    tokens: McpTokens  # personal tokens for AI agents (`/docs token`, agents/http.py)
    unfurler: Unfurler  # docs links pasted in Slack (bot/unfurls.py)
    agent_views: AgentViews  # what each person looks at in docsbot's agent view (bot/agent_view.py)
    run_sync: SyncCommand | None = None
    recovery: Recovery | None = None  # ends the placeholders of a process that died (bot.serve runs it)
    state_file: FileWatch | None = None  # a SQLite state file deleted while in use is restored (readiness)

    @property
    def threads(self) -> ThreadRecord:
        """docsbot's record of its threads (bot/threads.py keeps it, bot/conversation.py reads it)."""
        return self.answerer.threads

    @property
    def policy(self) -> AccessPolicy:
        """The access policy in force (re-read when the file changes)."""
        return self.access.policy

    async def first_event(self, event_id: str) -> bool:
        """False for a delivery of an event some replica already received (Slack's retry)."""
        return await self._claim(f"event:{event_id}")

    async def first_delivery(self, channel: str, ts: str) -> bool:
        """False for a message some replica already started answering: a DM mention arrives
        both as `app_mention` and as `message.im`, with different event ids."""
        return await self._claim(f"message:{channel}:{ts}")

    async def first_request(self, digest: str) -> bool:
        """False for a replay of a signed request some replica already took (the digest of its
        signature, timestamp and body): commands and forms carry no event id, and Slack never
        sends one twice, so a second copy within the signature's window is someone replaying it."""
        return await self._claim(f"request:{digest}", max(self.settings.bot_dedupe_ttl_s, REPLAY_WINDOW_S))

    async def _claim(self, key: str, ttl_s: float | None = None) -> bool:
        """Fails open: with the state database unreachable a rare double answer beats none."""
        try:
            return await self.dedupe.claim(key, self.settings.bot_dedupe_ttl_s if ttl_s is None else ttl_s)
        except StateUnavailable as exc:
            log.warning("handling %s without dedupe: %s", key, exc)
            return True

    async def prune(self) -> None:
        """Delete expired answers (keeping unreviewed 👎), what the thread record holds from as
        long ago, and expired dedupe keys."""
        try:
            answers, keys = await self.answer_log.prune(), await self.dedupe.prune()
            await self.threads.prune()
            await self.agent_views.prune()
            if self.recovery is not None:
                await self.recovery.journal.prune()
        except StateUnavailable as exc:
            log.warning("retention skipped this time: %s", exc)
            return
        if answers:
            log.info("retention: deleted %d expired answers (%d dedupe keys)", answers, keys)


def housekeeping(services: Services, every_s: float = HOUSEKEEPING_EVERY_S) -> AbstractAsyncContextManager[None]:
    """Run `services.prune()` at once and then every `every_s`, in the background, while the
    body runs: retention never runs inside a question."""
    return every(every_s, services.prune, "housekeeping")


def services_of(context: AsyncBoltContext) -> Services:
    return context["docsbot"]
