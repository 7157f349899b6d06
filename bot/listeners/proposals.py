"""Docs changes proposed from Slack (issue 53): the "Suggest a docs change" message shortcut opens
the draft (bot/proposal_form.py); its submission becomes a branch and a pull request
(proposals/), and the thread is told where it is.

Access as everywhere: a page the proposer may not read is refused as a page that is not there,
and the thread hears of the request only when the page is at or below what everyone in it may
read (otherwise the proposer alone is told). A person proposes at most DOCSBOT_PROPOSALS_PER_DAY
changes a day, counted across replicas.
"""
from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import proposal_form
from bot.notes import ephemeral
from bot.proposal_form import PAGE, QUOTE, SECTION, TEXT, TITLE, Origin
from bot.services import Services, services_of
from foundation.errors import UserError
from foundation.forge_target import proposals_folder, target_of
from foundation.settings_bounds import DAY_S
from proposals.branch import ProposalError
from proposals.propose import Proposal, propose
from rag import Level
from state.answers import LoggedAnswer
from state.db import StateUnavailable
from state.proposals import Proposals, Proposed
from state.ratelimit import RateLimit

log = logging.getLogger(__name__)


def register(app: AsyncApp) -> None:
    app.shortcut(proposal_form.SHORTCUT)(shortcut_used)
    app.view(proposal_form.FORM)(form_submitted)


async def shortcut_used(ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient,
                        context: AsyncBoltContext) -> None:
    await ack()
    services = services_of(context)
    services.work.spawn(_open(services, client, body, context.bot_user_id), name="docs-change-form")


async def _open(services: Services, client: AsyncWebClient, body: dict[str, Any], bot_user_id: str | None) -> None:
    channel = (body.get("channel") or {}).get("id", "")
    message = body.get("message") or {}
    proposer = body["user"]["id"]
    thread_ts = message.get("thread_ts") or message.get("ts", "")
    audience = await services.answerer.directory.audience(channel)
    answer = await _thread_answer(services, channel, thread_ts, message, bot_user_id)
    page, section = _preselected(answer)
    by_bot = message.get("bot_id") or message.get("user") == bot_user_id
    words = "" if by_bot or not proposal_form.may_prefill(audience.public_channel, proposer,
                                                          message.get("user", "")) else message.get("text", "")
    origin = Origin(channel, thread_ts, audience.public_channel, answer.answer_id if answer else "")
    ask_consent = not audience.public_channel and answer is not None and answer.asker == proposer
    try:
        await client.views_open(trigger_id=body["trigger_id"],
                                view=proposal_form.form(origin, page, section, words, ask_consent))
    except SlackApiError as exc:
        log.warning("could not open the docs change form: %s", exc.response.get("error"))


async def _thread_answer(services: Services, channel: str, thread_ts: str, message: dict[str, Any],
                         bot_user_id: str | None) -> LoggedAnswer | None:
    """The answer of docsbot's the shortcut was used on, else its latest answer in the thread."""
    try:
        found = await services.answer_log.find_by_message(channel, message.get("ts", ""))
        if found is not None:
            return found
        posted = await services.threads.messages(channel, thread_ts) or []
        for earlier in reversed(posted):
            if earlier.get("user") == bot_user_id or earlier.get("bot_id"):
                found = await services.answer_log.find_by_message(channel, earlier.get("ts", ""))
                if found is not None:
                    return found
    except StateUnavailable as exc:
        log.warning("the docs change form opens without the thread's answer: %s", exc)
    return None


def _preselected(answer: LoggedAnswer | None) -> tuple[str, str]:
    """The page and section the thread's answer cited, else the near miss it named."""
    if answer is None:
        return "", ""
    cited = answer.citations[0] if answer.citations else (answer.diagnostics or {}).get("near_miss") or {}
    return str(cited.get("doc_path") or ""), str(cited.get("section") or "")


async def form_submitted(ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient,
                         context: AsyncBoltContext) -> None:
    given = proposal_form.values(view)
    problems = proposal_form.errors(given)
    if problems:
        await ack(response_action="errors", errors=problems)
        return
    await ack()
    origin = proposal_form.origin_of(view)
    if origin is None:
        log.warning("docs change form submitted without where it came from: ignored")
        return
    services = services_of(context)
    services.work.spawn(_submit(services, client, body["user"]["id"], origin, given), name="docs-change")


async def _submit(services: Services, client: AsyncWebClient, user: str, origin: Origin,
                  given: dict[str, str]) -> None:
    tell = ephemeral(client, origin.channel, user, origin.thread_ts or None).tell
    try:
        wait = await RateLimit(services.answer_log.db, services.settings.proposals_per_day, DAY_S).take(
            f"proposal:{user}")
    except StateUnavailable as exc:
        log.warning("docs change not proposed: %s", exc)
        await tell("I couldn't propose it just now, please try again.")
        return
    if wait > 0:
        await tell(proposal_form.LIMITED)
        return
    page_level = await _page_level(services, user, given[PAGE], bool(given[TITLE]))
    if page_level is None:
        await tell(proposal_form.NOT_READABLE)
        return
    name, email = await _person(client, user)
    question = await _question(services, origin, user, given[QUOTE] == "yes")
    try:
        target, path = target_of(services.settings, given[PAGE], proposals_folder(services.settings))
        done = await propose(Proposal(path, given[SECTION], given[TEXT], name, email, question,
                                      await _permalink(client, origin), new_title=given[TITLE]), target)
    except (UserError, ProposalError) as exc:
        log.warning("docs change not proposed: %s", exc)
        await tell(f"I couldn't propose it: {exc}")
        return
    if done.pushed:
        await _record(services, Proposed(done.branch, given[PAGE], given[SECTION], page_level, done.url, done.number,
                                         user, origin.channel, origin.thread_ts, origin.answer_id))
    audience = await services.answerer.directory.audience(origin.channel)
    if done.url and int(page_level) <= int(audience.level):
        await client.chat_postMessage(channel=origin.channel, thread_ts=origin.thread_ts or None,
                                      text=proposal_form.proposed(user, done.url, given[PAGE]))
    said = [f"Opened {done.url}" if done.url else f"Pushed the branch `{done.branch}`" if done.pushed else "",
            f"A patch for the page's owners: `{done.patch.name}`" if done.patch else "", done.note]
    await tell(". ".join(part for part in said if part) + ".")


async def _record(services: Services, proposed: Proposed) -> None:
    try:
        await Proposals(services.answer_log.db).add(proposed)
    except StateUnavailable as exc:
        log.warning("docs change %s proposed but not recorded: %s", proposed.branch, exc)


async def _page_level(services: Services, user: str, page: str, new_page: bool) -> Level | None:
    """The page's level when the proposer may read it (a new page: `public` until its owners say);
    None when they may not, or when a new page's path is a page already."""
    level = await services.answerer.directory.user_level(user)
    if level is None:
        return None
    readable = await services.engine.store.doc_rows(page, int(level))
    if readable:
        return Level[str(readable[0].get("access") or "restricted")]
    if new_page and not await services.engine.store.doc_rows(page, int(Level.restricted)):
        return Level.public
    return None


async def _question(services: Services, origin: Origin, user: str, consented: bool) -> str:
    """The thread's question, where it may be quoted: said in a public channel, or the proposer's own
    and ticked."""
    if not origin.answer_id:
        return ""
    try:
        answer = await services.answer_log.get(origin.answer_id)
    except StateUnavailable:
        return ""
    if answer is None:
        return ""
    return answer.question if origin.public or (consented and answer.asker == user) else ""


async def _person(client: AsyncWebClient, user: str) -> tuple[str, str]:
    """(name, e-mail) for the commit's Co-authored-by; the user id and no e-mail when unknown."""
    try:
        profile = ((await client.users_info(user=user)).get("user") or {}).get("profile") or {}
    except SlackApiError:
        return user, ""
    return str(profile.get("real_name") or user), str(profile.get("email") or "")


async def _permalink(client: AsyncWebClient, origin: Origin) -> str:
    if not origin.thread_ts:
        return ""
    try:
        return str((await client.chat_getPermalink(channel=origin.channel, message_ts=origin.thread_ts))
                   .get("permalink") or "")
    except SlackApiError:
        return ""

