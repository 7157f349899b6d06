"""Buttons: "Answer me in a DM" (the private offer), "Ask again" (on a placeholder a stopped process
left), and Slack's native feedback buttons (handed to the same vote handling as our own 👍/👎
buttons in listeners/feedback.py, which keep working on messages posted before)."""
from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks
from bot.listeners.feedback import vote_button
from bot.notes import by_response_url
from bot.services import services_of


def register(app: AsyncApp) -> None:
    app.action(blocks.ANSWER_IN_DM)(answer_in_dm)
    app.action(blocks.FEEDBACK_NATIVE)(native_feedback)
    app.action(blocks.ASK_AGAIN)(ask_again)


async def native_feedback(
    ack: AsyncAck, action: dict[str, Any], body: dict[str, Any], respond: AsyncRespond,
    client: AsyncWebClient, context: AsyncBoltContext,
) -> None:
    """A click on Slack's 👍/👎: the same record (and, for 👎, the same "what was wrong?" form)."""
    vote, _, answer_id = str(action.get("value", "")).partition(":")
    as_button = action | {"action_id": blocks.FEEDBACK_UP if vote == "up" else blocks.FEEDBACK_DOWN, "value": answer_id}
    await vote_button(ack, as_button, body, respond, client, context)


async def answer_in_dm(
    ack: AsyncAck, action: dict[str, Any], body: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext
) -> None:
    """The asker's level is looked up again: the click may come long after the offer."""
    await ack()

    async def answer() -> None:
        await respond(replace_original=True, text="I'll answer you in our direct message.")
        await services.answerer.answer_in_dm(body["user"]["id"], action["value"], by_response_url(respond).tell)

    services = services_of(context)
    services.work.spawn(answer(), name="dm-offer")


async def ask_again(
    ack: AsyncAck, action: dict[str, Any], body: dict[str, Any], respond: AsyncRespond, context: AsyncBoltContext
) -> None:
    """The button on a placeholder a stopped process left: its question, asked again by its asker."""
    await ack()
    services = services_of(context)
    if services.recovery is None:
        return
    services.work.spawn(services.recovery.ask_again(services.answerer, body["user"]["id"], str(action.get("value", "")),
                                                    by_response_url(respond).tell), name="ask-again")
