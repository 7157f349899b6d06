"""Changes to who reads a conversation: each forgets that conversation's cached audience at once,
in this replica and (through the shared change log, bot.directory) in every other before its next answer.

A guest joining a private channel lowers the next answer's level there immediately, instead of
after the lookup cache expires; a channel shared with another organisation is looked up again
too. A person whose account changed (e.g. became a guest) is looked up again. (A public channel
made private is announced only as a `message` subtype in the channel; it can only leave the
level as it was or raise it, so the cached audience stays on the safe side until it expires.)
"""
from __future__ import annotations

from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext

from bot.services import services_of

CHANNEL_EVENTS = (
    "member_joined_channel", "member_left_channel",
    "channel_shared", "channel_unshared", "channel_left",
    "group_left", "group_archive", "group_unarchive", "group_rename",
)


def register(app: AsyncApp) -> None:
    for name in CHANNEL_EVENTS:
        app.event(name)(audience_changed)
    app.event("user_change")(user_changed)


async def audience_changed(event: dict[str, Any], context: AsyncBoltContext) -> None:
    channel = event.get("channel")
    channel_id = channel.get("id") if isinstance(channel, dict) else channel
    if isinstance(channel_id, str) and channel_id:
        await services_of(context).answerer.directory.channel_changed(channel_id)


async def user_changed(event: dict[str, Any], context: AsyncBoltContext) -> None:
    user = event.get("user")
    if isinstance(user, dict) and isinstance(user.get("id"), str):
        await services_of(context).answerer.directory.user_changed(user["id"])
