"""Feedback: 👍/👎 buttons, the "what was wrong?" form, 👍/👎 reactions and their removal, and
the candidates summary of `/docs feedback`.

Every vote is written to the answer log at once (one record per person and answer, however
often they click or react); the person gets a private thank-you, nothing is posted publicly,
or a private "please try again" when the state database cannot be reached.
As everywhere in the bot, Slack is acknowledged first and the work runs in `services.work`.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks, feedback, telemetry
from insights.candidates import find_candidates, render
from bot.notes import Notes, by_response_url, ephemeral
from bot.services import Services, services_of
from rag import Level
from state.answers import AnswerLogError, LoggedAnswer, Vote
from state.db import StateUnavailable
from state.gaps import Reader

log = logging.getLogger(__name__)


def register(app: AsyncApp) -> None:
    app.action(blocks.FEEDBACK_UP)(vote_button)
    app.action(blocks.FEEDBACK_DOWN)(vote_button)
    app.action(feedback.FEEDBACK_EXPLAIN)(explain_button)
    app.view(feedback.FEEDBACK_FORM)(form_submitted)
    app.event("reaction_added")(reaction_added)
    app.event("reaction_removed")(reaction_removed)


async def vote_button(
    ack: AsyncAck, action: dict[str, Any], body: dict[str, Any], respond: AsyncRespond,
    client: AsyncWebClient, context: AsyncBoltContext,
) -> None:
    await ack()
    services = services_of(context)
    services.work.spawn(_vote(services, client, respond, action, body), name="feedback-button")


async def _vote(services: Services, client: AsyncWebClient, respond: AsyncRespond,
                action: dict[str, Any], body: dict[str, Any]) -> None:
    """👍 thanks the person; 👎 opens the form (the vote is recorded before either)."""
    vote: Vote = "up" if action["action_id"] == blocks.FEEDBACK_UP else "down"
    answer_id = action.get("value", "")
    try:
        await services.answer_log.add_feedback(answer_id, body["user"]["id"], vote, "button")
    except AnswerLogError as exc:
        log.info("feedback not recorded: %s", exc)
        await by_response_url(respond).tell(feedback.EXPIRED)
        return
    except StateUnavailable as exc:
        log.warning("vote on %s not recorded: %s", answer_id, exc)
        await by_response_url(respond).tell(feedback.RETRY)
        return
    telemetry.voted(vote, "button", answer_id)
    if vote == "up" or not await _open_form(client, body, answer_id):
        await by_response_url(respond).tell(feedback.THANKS)


async def explain_button(
    ack: AsyncAck, action: dict[str, Any], body: dict[str, Any], client: AsyncWebClient,
    respond: AsyncRespond, context: AsyncBoltContext,
) -> None:
    """The button under the note a 👎 reaction got: the same form; the note goes once it opens."""
    await ack()

    async def explain() -> None:
        if await _open_form(client, body, action.get("value", "")):
            await respond(delete_original=True)

    services_of(context).work.spawn(explain(), name="feedback-explain")


async def form_submitted(
    ack: AsyncAck, body: dict[str, Any], view: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    reason, expected = feedback.form_values(view)
    if reason is None:
        await ack(response_action="errors", errors={feedback.REASON_INPUT: "Pick what was wrong."})
        return
    await ack()
    meta = feedback.form_metadata(view)
    if meta is None:
        log.warning("feedback form without its answer reference: %r", view.get("private_metadata"))
        return
    services = services_of(context)
    services.work.spawn(_explain(services, client, meta, body["user"]["id"], reason, expected), name="feedback-form")


async def _explain(services: Services, client: AsyncWebClient, meta: dict[str, Any], user: str,
                   reason: str, expected: str | None) -> None:
    try:
        await services.answer_log.explain(meta["answer_id"], user, reason, expected)
        text = feedback.THANKS
    except AnswerLogError as exc:
        log.info("feedback form not saved: %s", exc)
        text = feedback.EXPIRED
    except StateUnavailable as exc:
        log.warning("feedback form on %s not saved: %s", meta["answer_id"], exc)
        text = feedback.RETRY
    if meta.get("channel"):
        await ephemeral(client, meta["channel"], user, meta.get("thread_ts")).tell(text)


async def reaction_added(event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext) -> None:
    services = services_of(context)
    services.work.spawn(_reaction_added(services, client, event, context.bot_user_id), name="reaction")


async def _reaction_added(services: Services, client: AsyncWebClient, event: dict[str, Any],
                          bot_user_id: str | None) -> None:
    """A 👍/👎 reaction on one of the bot's answers is a vote; a 👎 also gets a private note
    asking what was wrong (unless the person already said)."""
    try:
        found = await _reacted_answer(services, event, bot_user_id)
        if found is None:
            return
        answer, vote = found
        record = await services.answer_log.add_feedback(answer.answer_id, event["user"], vote, "reaction")
    except StateUnavailable as exc:
        await _not_recorded(client, event, exc)
        return
    telemetry.voted(vote, "reaction", answer.answer_id)
    if vote == "down" and not record.reason:
        await ephemeral(client, answer.channel, event["user"], answer.thread_ts or None).reply(
            feedback.ask_why(answer.answer_id))


async def reaction_removed(event: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext) -> None:
    services = services_of(context)

    async def withdraw() -> None:
        try:
            found = await _reacted_answer(services, event, context.bot_user_id)
            if found is not None:
                answer, vote = found
                await services.answer_log.withdraw_reaction(answer.answer_id, event["user"], vote)
        except StateUnavailable as exc:
            await _not_recorded(client, event, exc)

    services.work.spawn(withdraw(), name="reaction-removed")


async def _not_recorded(client: AsyncWebClient, event: dict[str, Any], exc: StateUnavailable) -> None:
    """A reaction vote that could not be written: the person is told, privately, to try again."""
    item = event.get("item") or {}
    log.warning("reaction vote on %s/%s not recorded: %s", item.get("channel"), item.get("ts"), exc)
    if item.get("channel") and event.get("user"):
        await ephemeral(client, item["channel"], event["user"]).tell(feedback.RETRY)


async def _reacted_answer(
    services: Services, event: dict[str, Any], bot_user_id: str | None
) -> tuple[LoggedAnswer, Vote] | None:
    """The logged answer a person's vote reaction is on, with the vote; None for anything else."""
    vote = feedback.reaction_vote(event.get("reaction") or "")
    item = event.get("item") or {}
    user = event.get("user")
    if vote is None or item.get("type") != "message" or not user or user == bot_user_id:
        return None
    answer = await services.answer_log.find_by_message(item.get("channel") or "", item.get("ts") or "")
    return (answer, vote) if answer is not None else None


async def feedback_summary(services: Services, user: str, notes: Notes) -> None:
    """`/docs feedback`: the 👎 candidates by likely cause, for admins, of questions answered at
    the admin's own level or below (an admin the directory cannot place sees public ones only)."""
    if not services.policy.is_admin(user):
        await notes.tell("Only the admins listed in the access file can review feedback.")
        return
    level = await services.answerer.directory.user_level(user)
    try:
        downvoted = await services.answer_log.pending_downvoted(max_level=Level.public if level is None else level)
    except StateUnavailable as exc:
        log.warning("feedback summary unavailable: %s", exc)
        await notes.tell("I couldn't read the feedback just now, please try again.")
        return
    found = await asyncio.to_thread(find_candidates, downvoted, services.engine.store)
    await notes.reply(feedback.summary(render(found, Reader(user))))


async def _open_form(client: AsyncWebClient, body: dict[str, Any], answer_id: str) -> bool:
    channel = (body.get("channel") or {}).get("id") or (body.get("container") or {}).get("channel_id", "")
    thread_ts = (body.get("message") or {}).get("thread_ts") or (body.get("container") or {}).get("thread_ts")
    try:
        await client.views_open(trigger_id=body["trigger_id"], view=feedback.form(answer_id, channel, thread_ts))
    except SlackApiError as exc:
        log.warning("could not open the feedback form: %s", exc.response.get("error"))
        return False
    return True
