"""`/docs QUESTION`, `/docs help`, `/docs status`, `/docs scope`, `/docs sync`, `/docs feedback`, `/docs gaps
[area]`, `/docs token [list | revoke ID]`; `/docs` alone opens a form."""
from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks, surfaces
from bot.answering import Question
from bot.channel_rules import scope_text
from bot.digest import gaps_command
from bot.listeners.feedback import feedback_summary
from bot.listeners.tokens import TOKEN, token_command
from bot.notes import Notes, Reply, Tell, by_response_url
from bot.services import Services, services_of
from rag import StoreError

log = logging.getLogger(__name__)

HELP = """*Ask the docs*
• `@docsbot your question` in a channel or thread (follow-ups in a thread use the thread; in a thread where \
I answered you, ask your next question without the mention)
• `/docs your question`: I post the question here and answer in its thread
• a direct message to me: answered at your own access level
• `/docs status`: what is indexed, and the last sync
• `/docs scope`: the part of the docs this channel searches first, if any
• `/docs sync`: sync the docs now (admins only)
• `/docs feedback`: thumbs-down answers waiting for review (admins only)
• `/docs gaps [area]`: what the docs could not answer last week, and why (admins and docs owners)
• `/docs token`: a token for your AI agent (MCP), shown only to you; `/docs token list`, `/docs token revoke ID`
Answers only use documents everyone in the conversation may read; each cites its sources."""

ECHO_LIMIT = 2500  # the question as echoed in "<@user> asked: …": one section block with room to spare
GAPS = re.compile(r"gaps(?:\s+(\S+))?")  # `/docs gaps` or `/docs gaps <area>` (one word: a question has more)
INVITE_HINT = ("I'm not a member of this conversation, so only you can see this answer. "
               "To get answers here, invite me with `/invite @docsbot`.")


def register(app: AsyncApp) -> None:
    app.command("/docs")(docs_command)


def replay_key(request: AsyncBoltRequest) -> str:
    """What makes a signed request unique: its signature, timestamp and body (a replay has all three)."""
    signed = [request.headers.get(name, [""])[0] for name in ("x-slack-signature", "x-slack-request-timestamp")]
    return hashlib.sha256("\n".join([*signed, request.raw_body]).encode("utf-8", "replace")).hexdigest()


async def docs_command(
    ack: AsyncAck, command: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient, context: AsyncBoltContext,
    request: AsyncBoltRequest,
) -> None:
    """Acknowledged at once; a replayed command (the same signed request again) is acked and
    dropped in the background, where the claim's round trip to the state database costs no ack time."""
    await ack()
    services = services_of(context)
    services.work.spawn(_run(services, command, respond, client, replay_key(request)), name="docs-command")


async def _run(services: Services, command: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient,
               digest: str) -> None:
    if not await services.first_request(digest):
        log.warning("a replayed /docs command (same signature, timestamp and body) dropped")
        return
    text = (command.get("text") or "").strip()
    word = text.lower()
    notes = by_response_url(respond)
    if not text:
        await client.views_open(trigger_id=command["trigger_id"], view=blocks.ask_form(command["channel_id"]))
    elif word == "help":
        await notes.tell(HELP)
    elif word == "status":
        status = await services.status(services.policy.is_admin(command["user_id"]))
        await notes.tell(status)
    elif word == "scope":
        await notes.tell(await _scope(services, command["channel_id"]))
    elif word == "sync":
        await _sync(services, command["user_id"], notes)
    elif word == "feedback":
        await feedback_summary(services, command["user_id"], notes)
    elif gaps := GAPS.fullmatch(word):
        await gaps_command(services, client, command["user_id"], gaps.group(1) or "", notes)
    elif token := TOKEN.fullmatch(word):
        await token_command(services, command["user_id"], token, notes)
    else:
        await ask_in_channel(services, text, command["user_id"], command["channel_id"], notes.tell,
                             with_invite_hint(notes.reply), command.get("team_id", ""))


async def ask_in_channel(
    services: Services, text: str, user: str, channel: str, tell: Tell, private: Reply, team: str = ""
) -> None:
    """Post "<@user> asked: …" in the channel and answer in its thread."""
    announce = blocks.notice(f"<@{user}> asked: {blocks.escape_within(text, ECHO_LIMIT)}", echoes_user=True)
    q = Question(text, user, channel, None, team=team)
    await services.answerer.answer_in_conversation(q, tell, surfaces.command(announce, private))


async def _scope(services: Services, channel: str) -> str:
    rules = services.policy.rules(channel)
    if rules.scope is None:
        return scope_text(rules, None)
    try:
        documents: int | None = len(rules.scope.within(await services.engine.store.documents()))
    except StoreError as exc:
        log.warning("/docs scope: the index could not be read: %s", exc)
        documents = None
    return scope_text(rules, documents)


def with_invite_hint(reply: Reply) -> Reply:
    """An answer the bot could not post in the conversation, with how to invite it there."""

    async def private(message: dict[str, Any]) -> None:
        message["blocks"].append(blocks.section(INVITE_HINT))
        await reply(message)

    return private


async def _sync(services: Services, user: str, notes: Notes) -> None:
    if not services.policy.is_admin(user):
        await notes.reply({"text": "Only the admins listed in the access file can run a sync."})
    elif services.run_sync is None:
        await notes.reply({"text": "Syncing isn't set up in this deployment."})
    else:
        await notes.tell(await services.run_sync())
