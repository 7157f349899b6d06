"""A `docsbot serve` process killed (SIGKILL: no drain) while answering leaves its placeholder
behind; the restarted process, or another replica, ends it with a note and an "Ask again"
button once the dead owner's lease expires, exactly once, and the button answers the question."""
from __future__ import annotations

import asyncio
import signal
import time

from bot import blocks
from bot.blocks import WORKING
from bot.deliveries import buttons
from bot.local import demo
from bot.local.standin import SlackStandIn, visible_text
from bot.recovery import ORPHANED
from foundation.settings import Settings
from rag.engine import Engine
from eval.standins.openai_server import OpenAIStandIn
from tests.support.served import served_with
from tests.support.waiting import until


async def test_a_placeholder_left_by_a_killed_process_is_ended_once_by_the_restarted_one(
        sample_engine: Engine, settings: Settings) -> None:
    model = OpenAIStandIn().start()
    model.reply = lambda messages: "Use the VPN portal [1]."
    model.delay_s = 30.0
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    data_dir = str(settings.data_dir)
    try:
        async with served_with(data_dir, standin, model) as first:
            assert await first.ask("how do I set up the VPN?") == 200
            await until(lambda: len(model.requests) == 1 and len(first.bot_messages()) == 1)
            await asyncio.sleep(3.0)  # 3 s into the answer
            first.process.send_signal(signal.SIGKILL)
            await first.process.wait()
        [placeholder] = first.bot_messages()
        assert placeholder["text"] == WORKING  # 3 s in: the answer's plan (bot/plan.py)
        progress = len([c for c in standin.calls_to("chat.update") if c["ts"] == placeholder["ts"]])
        model.delay_s = 0.0
        killed = time.monotonic()
        # Two processes start on the same state database: the restarted one and another replica.
        async with served_with(data_dir, standin, model) as again, served_with(data_dir, standin, model):
            await until(lambda: again.bot_messages()[0]["text"] != WORKING, timeout_s=60)
            ended_after = time.monotonic() - killed
            print(f"the placeholder was ended {ended_after:.1f} s after the kill")
            await asyncio.sleep(2 * 5.0)  # two more sweeps by each process
            [note] = again.bot_messages()
            assert visible_text(note).startswith(ORPHANED), visible_text(note)
            edits = [c for c in standin.calls_to("chat.update") if c["ts"] == placeholder["ts"]][progress:]
            assert len(edits) == 1, edits  # ended once, by one of the two
            assert ended_after < 60
            [ask_again] = [b for b in buttons(note) if b["action_id"] == blocks.ASK_AGAIN]
            assert (await again.slack.click(demo.BOB, demo.GENERAL, ask_again, note)).status == 200
            await until(lambda: any("Use the VPN portal" in visible_text(m) for m in again.bot_messages()))
            assert len(model.requests) == 2  # asked once more, by one process
            assert (await again.slack.click(demo.BOB, demo.GENERAL, ask_again, note)).status == 200
            await asyncio.sleep(2.0)
            assert len(model.requests) == 2  # a second press asks nothing
    finally:
        await standin.stop()
        model.stop()
