"""The assistant side panel (Bolt's `AsyncAssistant`): a greeting and suggested prompts when a
thread starts, then each message answered in its thread while the status line says what happens.

The panel is private to the asker, so answers use the asker's own level, whatever channel they
are looking at: `assistant_thread_context_changed` is recorded by nobody and widens nothing.
"""
from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp, AsyncAssistant
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.say.async_say import AsyncSay
from slack_bolt.context.set_status.async_set_status import AsyncSetStatus
from slack_bolt.context.set_suggested_prompts.async_set_suggested_prompts import AsyncSetSuggestedPrompts
from slack_bolt.context.set_title.async_set_title import AsyncSetTitle
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks, surfaces, threads
from bot.answering import Question
from bot.conversation import question_text, thread_history
from bot.notes import in_conversation
from bot.services import Services, services_of
from bot.suggestions import suggested_prompts
from rag import Level

log = logging.getLogger(__name__)

GREETING = "Hi! Ask me anything about our docs: I answer from the documents you may read, with their sources."
PROMPTS_TITLE = "Questions people ask"
SEARCHING = "is searching the docs…"
_TITLE_CHARS = 80


def register(app: AsyncApp) -> None:
    assistant = AsyncAssistant()
    assistant.thread_started(thread_started)
    assistant.thread_context_changed(context_changed)
    assistant.user_message(user_message)
    app.assistant(assistant)


async def thread_started(
    event: dict[str, Any], say: AsyncSay, set_suggested_prompts: AsyncSetSuggestedPrompts, context: AsyncBoltContext
) -> None:
    services = services_of(context)
    user = (event.get("assistant_thread") or {}).get("user_id") or ""
    services.work.spawn(_greet(services, user, say, set_suggested_prompts), name="assistant-greeting")


async def _greet(services: Services, user: str, say: AsyncSay, set_suggested_prompts: AsyncSetSuggestedPrompts) -> None:
    level = await services.answerer.directory.user_level(user) or Level.public
    await say(**blocks.notice(GREETING))
    prompts = await suggested_prompts(services.answer_log, services.engine.store, level)
    if prompts:
        await set_suggested_prompts(prompts=prompts, title=PROMPTS_TITLE)


async def context_changed(event: dict[str, Any]) -> None:
    """The asker looks at another channel now: nothing changes (the panel stays at their level)."""
    log.debug("assistant thread context changed: ignored for access")


async def user_message(
    payload: dict[str, Any], set_status: AsyncSetStatus, set_title: AsyncSetTitle, client: AsyncWebClient,
    context: AsyncBoltContext,
) -> None:
    services = services_of(context)
    if payload.get("subtype") or not payload.get("user"):
        return
    services.work.spawn(_answer(services, client, payload, set_status, set_title, context), name="assistant")


async def _answer(
    services: Services, client: AsyncWebClient, payload: dict[str, Any], set_status: AsyncSetStatus,
    set_title: AsyncSetTitle, context: AsyncBoltContext,
) -> None:
    channel, user, root = payload["channel"], payload["user"], payload["thread_ts"]
    if not await services.first_delivery(channel, payload["ts"]):  # claimed here, so `work.idle()` covers it
        return
    tell = in_conversation(client, channel, root).tell  # only the asker reads the panel's thread
    await threads.took(services.threads, payload, context.bot_user_id)
    text = question_text(payload.get("text") or "", context.bot_user_id)
    if not text:
        await tell(GREETING)
        return
    history = await thread_history(client, services.threads, channel, root, payload["ts"], context.bot_user_id)
    await _quietly(set_status(SEARCHING), "status")
    if not any(speaker == "user" for speaker, _ in history):
        await _quietly(set_title(text[:_TITLE_CHARS]), "title")
    q = Question(text, user, channel, root, history, team=context.team_id or "")
    await services.answerer.answer_in_conversation(q, tell, surfaces.ASSISTANT)


async def _quietly(call: Any, what: str) -> None:
    """The status and title are niceties: a thread that is not an assistant thread refuses them."""
    try:
        await call
    except SlackApiError as exc:
        log.info("could not set the assistant thread %s: %s", what, exc.response.get("error"))
