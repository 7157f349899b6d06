"""Graceful restarts of a real `docsbot serve` process (SIGTERM), against the Slack and OpenAI
stand-ins: readiness fails first, new Slack requests are refused so Slack redelivers them
elsewhere, answers in flight finish within DOCSBOT_DRAIN_S, and no placeholder is left behind."""
from __future__ import annotations

import asyncio
import signal
import time

from bot.blocks import is_placeholder
from bot.serve import RESTARTED
from bot.local.standin import visible_text
from foundation.settings import Settings
from rag.engine import Engine
from tests.support.served import Served, served
from tests.support.waiting import until

QUESTIONS = 5


async def in_flight(bot: Served) -> None:
    """Five questions, each with its placeholder posted and its model call started."""
    assert [await bot.ask(f"how do I set up the VPN? ({i})") for i in range(QUESTIONS)] == [200] * QUESTIONS
    await until(lambda: len(bot.model.requests) == QUESTIONS and len(bot.bot_messages()) == QUESTIONS)


async def test_sigterm_lets_the_answers_in_flight_finish(sample_engine: Engine, settings: Settings) -> None:
    async with served(settings.data_dir, model_delay_s=2.0, DOCSBOT_DRAIN_S="20") as bot:
        await in_flight(bot)
        bot.process.send_signal(signal.SIGTERM)
        await asyncio.sleep(0.3)
        assert await bot.get("/readyz") == 503
        # not ready any more, answers still in flight: no answer posted yet (a slow answer's plan may show)
        assert all(b.get("type") == "plan" for c in bot.standin.calls_to("chat.update") for b in c.get("blocks") or [])
        assert await bot.ask("and the wifi?") == 503  # refused: Slack delivers it again elsewhere
        assert await asyncio.wait_for(bot.process.wait(), 30) == 0
        texts = [visible_text(m) for m in bot.bot_messages()]
        assert len(texts) == QUESTIONS and all("Use the VPN portal" in t for t in texts), texts
        assert not any(is_placeholder(m["text"]) for m in bot.bot_messages())


async def test_answers_past_the_drain_time_end_as_the_restart_note(sample_engine: Engine, settings: Settings) -> None:
    async with served(settings.data_dir, model_delay_s=10.0, DOCSBOT_DRAIN_S="3") as bot:
        await in_flight(bot)
        signalled = time.monotonic()
        bot.process.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(bot.process.wait(), 30) == 0
        assert time.monotonic() - signalled < 9.0  # the drain, not the model, decided when it stopped
        texts = [visible_text(m) for m in bot.bot_messages()]
        assert texts == [RESTARTED] * QUESTIONS, texts
        assert sum("reason=restarted" in line for line in bot.stderr) == QUESTIONS
