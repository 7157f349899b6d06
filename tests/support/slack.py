"""Talking to the bot through the local harness as people in the demo workspace do: questions,
mentions, the answers as they read now, the App Home, streamed replies."""
from __future__ import annotations

import dataclasses
from typing import Any

from bot.blocks import is_placeholder
from bot.local.harness import LocalSlack
from bot.local.standin import SlackStandIn
from foundation.settings import Settings
from foundation.wiring import rag_config
from rag.engine import Engine
from rag.generation import make_generator
from eval.standins.openai_server import OpenAIStandIn

VPN = "how do I set up the VPN?"
BREAK_GLASS = "who approves break-glass access to the production database?"


def model_settings(settings: Settings, standin: OpenAIStandIn, **overrides: Any) -> Settings:
    """`settings` answering through the OpenAI stand-in (LLMChat over real HTTP)."""
    return settings.model_copy(update={"openai_base_url": standin.base_url, "llm_max_retries": 0,
                                       "llm_attempt_timeout_s": 10.0, **overrides})


def with_model(engine: Engine, settings: Settings) -> Engine:
    """`engine` configured by `settings` (from model_settings: answering through the stand-in)."""
    config = rag_config(settings)
    return dataclasses.replace(engine, config=config, generator=make_generator(config.llm))


async def mention(local: LocalSlack, user: str, channel: str, text: str, thread_ts: str | None = None,
                  event_id: str | None = None) -> tuple[str, float]:
    """A person posts `@docsbot text`; returns the message ts and the ack latency."""
    ts = local.standin.post_as_user(channel, user, f"<@{local.standin.workspace.bot_user_id}> {text}", thread_ts)
    delivered = await local.slack.event(local.slack.mention(user, channel, text, ts, thread_ts), event_id)
    assert delivered.status == 200, delivered.body
    return ts, delivered.seconds


def final_updates(standin: SlackStandIn) -> list[dict[str, Any]]:
    """The chat.update calls that gave a placeholder its final form (an answer, an abstention, a
    note), in any conversation; not its progress (a place in line, a slow answer's plan)."""
    return [u for u in standin.calls_to("chat.update", ok_only=True) if not is_placeholder(u["text"])]


def answers(local: LocalSlack, channel: str) -> list[dict[str, Any]]:
    """The bot's messages in a channel as they read now (placeholders replaced)."""
    return [m for m in local.standin.messages[channel] if m.get("bot_id") and not is_placeholder(m["text"])]


async def open_home(local: LocalSlack, user: str) -> dict[str, Any]:
    event = {"type": "app_home_opened", "user": user, "channel": local.standin.dm_channel(user), "tab": "home",
             "event_ts": local.standin.next_ts()}
    assert (await local.slack.event(event)).status == 200
    await local.settle()
    return local.standin.home_tabs[user]


def chat_methods(local) -> list[str]:  # type: ignore[no-untyped-def]
    return [c.method for c in local.standin.calls if c.method.startswith("chat.")]


def streamed_text(local) -> str:  # type: ignore[no-untyped-def]
    """Everything a stream showed, in order (what the readers saw before the final message)."""
    calls = [c.params for c in local.standin.calls if c.method.endswith("Stream")]
    return "".join((p.get("markdown_text") or "") + "".join(c.get("text", "") for c in p.get("chunks") or [])
                   for p in calls)
