"""Where a question came in, and what that changes about answering it: one `Surface` per way in,
and `NAMES`, every surface's name, declared here only.

A new surface (a workflow step, a shortcut) is one more value here (and in `NAMES`) and its
listener; the answerer reads only these fields. `name` is the `surface` label of the metrics and
log lines: /metrics serves each name's question series from the start (bot/health.py hands
`NAMES` to foundation.observability.metrics, which sits below bot and never imports it)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from agents import SURFACE as MCP

if TYPE_CHECKING:  # annotations only: the sync worker imports NAMES without Slack's SDK
    from bot.notes import Reply


@dataclass(frozen=True)
class Surface:
    name: str
    announce: dict[str, Any] | None = None  # posted first at the top level; the answer goes in its thread
    private: Reply | None = None  # where the answer goes when the bot may not post in the conversation
    # Read by the asker alone (the assistant panel): answered at their level, a status line instead
    # of a placeholder until something is posted, Slack's native feedback buttons on the answer.
    asker_alone: bool = False


MENTION = Surface("mention")
DM = Surface("dm")
COMMAND = Surface("command")  # `/docs`: each question's announcement and private reply (`command`)
ASSISTANT = Surface("assistant", asker_alone=True)
FOLLOWUP = Surface("followup")  # a question in a thread the bot answered, without a mention (bot/followups.py)

# The MCP tools (agents/) are a surface too: they answer without a `Surface` and label their
# metrics with `agents.SURFACE`.
NAMES = (*(s.name for s in (MENTION, DM, COMMAND, ASSISTANT, FOLLOWUP)), MCP)


def conversation(channel: str) -> Surface:
    """A mention in a channel or a message in a DM with the bot."""
    return DM if channel.startswith("D") else MENTION


def command(announce: dict[str, Any], private: Reply) -> Surface:
    """`/docs <question>`: announced in the channel, answered in its thread, or privately."""
    return replace(COMMAND, announce=announce, private=private)
