"""A replica says ready only once its Slack request path is warm: the first burst a load balancer
sends it is acknowledged like any later one (issue 19, item 10)."""
from __future__ import annotations

import asyncio

from bot.local import demo
from rag.engine import Engine
from tests.support.served import served
from tests.support.waiting import until


async def test_a_burst_right_after_ready_makes_no_auth_test_call_of_its_own(sample_engine: Engine) -> None:
    """Bolt authorizes each request with the result of one `auth.test`; cold, every request of a
    concurrent first burst made its own call to Slack before its ack (a round trip each, and a
    rate-limited Tier 2 method). After the warm-up, the burst finds the result cached."""
    async with served(sample_engine.config.index.data_dir) as bot:
        before = len(bot.standin.calls_to("auth.test"))
        assert before >= 1  # readiness itself checks the token
        statuses = await asyncio.gather(*[bot.ask(f"how do I set up the VPN? ({i})", user=user)
                                          for i, user in enumerate([demo.ALICE, demo.BOB, demo.EVE] * 7)])
        assert statuses == [200] * 21
        await until(lambda: len(bot.bot_messages()) == 21)
        assert len(bot.standin.calls_to("auth.test")) == before, "the first burst called auth.test itself"
        assert any("warmed up the Slack request path" in line for line in bot.stderr), bot.stderr[-5:]
