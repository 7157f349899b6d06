"""Where a question came in, and what that changes about answering it: one `Surface` per way in.

A new surface (a workflow step, a shortcut) is one more value here and its listener; the
answerer reads only these fields. `name` is the `surface` label of the metrics and log lines
(docsbot.observability.metrics.SURFACES lists them)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bot.notes import Reply


@dataclass(frozen=True)
class Surface:
    name: str
    announce: dict[str, Any] | None = None  # posted first at the top level; the answer goes in its thread
    private: Reply | None = None  # where the answer goes when the bot may not post in the conversation
    # Read by the asker alone (the assistant panel): answered at their level, a status line instead
    # of a placeholder until something is posted, Slack's native feedback buttons on the answer.
    asker_alone: bool = False


ASSISTANT = Surface("assistant", asker_alone=True)
FOLLOWUP = Surface("followup")  # a question in a thread the bot answered, without a mention (bot/followups.py)


def conversation(channel: str) -> Surface:
    """A mention in a channel or a message in a DM with the bot."""
    return Surface("dm" if channel.startswith("D") else "mention")


def command(announce: dict[str, Any], private: Reply) -> Surface:
    """`/docs <question>`: announced in the channel, answered in its thread, or privately."""
    return Surface("command", announce, private)
