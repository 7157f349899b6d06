"""What listeners need, attached to every Bolt request's context by one middleware."""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from slack_bolt.context.async_context import AsyncBoltContext

from bot.access import AccessFile, AccessPolicy
from bot.answering import Answerer
from bot.ttl import TTLCache
from bot.work import BackgroundWork
from docsbot.settings import Settings
from rag.answer_log import AnswerLog
from rag.engine import Engine

SyncCommand = Callable[[], Awaitable[str]]  # runs one docs sync, returns its summary


@dataclass
class Services:
    settings: Settings
    engine: Engine
    access: AccessFile
    answerer: Answerer
    answer_log: AnswerLog
    work: BackgroundWork
    # Event ids already acknowledged: Slack retries a delivery with the same id.
    seen_events: TTLCache[str, bool]
    # Messages already being answered, by (channel, ts): a DM mention may arrive both as
    # `app_mention` and as `message.im`; only the first starts an answer.
    seen_messages: TTLCache[tuple[str, str], bool]
    status: Callable[[], Awaitable[str]]
    run_sync: SyncCommand | None = None

    @property
    def policy(self) -> AccessPolicy:
        """The access policy in force (re-read when the file changes)."""
        return self.access.policy

    def first_delivery(self, channel: str, ts: str) -> bool:
        return self.seen_messages.add((channel, ts), True)


def services_of(context: AsyncBoltContext) -> Services:
    return context["docsbot"]
