"""Every Slack listener, registered in one place (laid out by kind, as in Slack's templates)."""
from __future__ import annotations

from slack_bolt.async_app import AsyncApp

from bot.listeners import (actions, agent, assistant, channels, commands, events, feedback, home, links,
                           proposals, views)


def register_listeners(app: AsyncApp) -> None:
    assistant.register(app)  # before `message`: it takes the messages of assistant threads
    events.register(app)
    commands.register(app)
    actions.register(app)
    views.register(app)
    feedback.register(app)
    channels.register(app)
    home.register(app)
    links.register(app)
    agent.register(app)
    proposals.register(app)
