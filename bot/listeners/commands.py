"""`/docs QUESTION`, `/docs help`, `/docs status`, `/docs sync`, `/docs feedback`; `/docs` alone opens a form."""
from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks
from bot.answering import Question, Reply, Tell
from bot.listeners.feedback import feedback_summary
from bot.services import Services, services_of

log = logging.getLogger(__name__)

HELP = """*Ask the docs*
• `@docsbot your question` in a channel or thread (follow-ups in a thread use the thread)
• `/docs your question`: I post the question here and answer in its thread
• a direct message to me: answered at your own access level
• `/docs status`: what is indexed, and the last sync
• `/docs sync`: sync the docs now (admins only)
• `/docs feedback`: thumbs-down answers waiting for review (admins only)
Answers only use documents everyone in the conversation may read; each cites its sources."""

INVITE_HINT = ("I'm not a member of this conversation, so only you can see this answer. "
               "To get answers here, invite me with `/invite @docsbot`.")


def register(app: AsyncApp) -> None:
    app.command("/docs")(docs_command)


async def docs_command(
    ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await ack()
    services = services_of(context)
    services.work.spawn(_run(services, command, respond, client), name="docs-command")


async def _run(services: Services, command: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient) -> None:
    text = (command.get("text") or "").strip()
    word = text.lower()
    if not text:
        await client.views_open(trigger_id=command["trigger_id"], view=blocks.ask_form(command["channel_id"]))
    elif word == "help":
        await respond(response_type="ephemeral", **blocks.notice(HELP))
    elif word == "status":
        await respond(response_type="ephemeral", **blocks.notice(await services.status()))
    elif word == "sync":
        await _sync(services, command["user_id"], respond)
    elif word == "feedback":
        await feedback_summary(services, command["user_id"], respond)
    else:
        await ask_in_channel(services, text, command["user_id"], command["channel_id"], _ephemeral(respond),
                             _private(respond), command.get("team_id", ""))


async def ask_in_channel(
    services: Services, text: str, user: str, channel: str, tell: Tell, private: Reply, team: str = ""
) -> None:
    """Post "<@user> asked: …" in the channel and answer in its thread."""
    announce = blocks.notice(f"<@{user}> asked: {blocks.escape(text)}")
    q = Question(text, user, channel, None, team=team)
    await services.answerer.answer_in_conversation(q, tell, announce, private)


def _ephemeral(respond: AsyncRespond) -> Tell:
    async def tell(text: str) -> None:
        await respond(response_type="ephemeral", replace_original=False, **blocks.notice(text))

    return tell


def _private(respond: AsyncRespond) -> Reply:
    async def reply(message: dict[str, Any]) -> None:
        message["blocks"].append(blocks.section(INVITE_HINT))
        await respond(response_type="ephemeral", replace_original=False, **message)

    return reply


async def _sync(services: Services, user: str, respond: AsyncRespond) -> None:
    if not services.policy.is_admin(user):
        await respond(response_type="ephemeral", text="Only the admins listed in the access file can run a sync.")
    elif services.run_sync is None:
        await respond(response_type="ephemeral", text="Syncing isn't set up in this deployment.")
    else:
        await respond(response_type="ephemeral", **blocks.notice(await services.run_sync()))
