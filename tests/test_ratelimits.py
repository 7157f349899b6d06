"""Slack's rate limits, through the real app against the Slack stand-in answering HTTP 429 with
Retry-After: a burst under limits shaped like Slack's is answered in full, with few chat.update
calls; a Retry-After never holds an answer slot; an hour-long one is not waited out: the answer
goes as a new message, or the asker is told when to ask again."""
from __future__ import annotations

import asyncio
import time

from bot.local import demo
from bot.answering import RATE_LIMITED
from bot.local.harness import local_slack
from bot.local.standin import Call, Failure, visible_text
from foundation.settings import Settings
from eval.bench_ratelimits import REPLY, Burst, run_burst
from rag.engine import Engine
from eval.standins.openai_server import OpenAIStandIn
from tests.support.slack import VPN, answers, mention, model_settings, with_model
# load: chat.update 10/min and chat.postMessage 1 per 5 s for 40 questions), time x10.
SMALL_BURST = Burst(people=20, per_person=2, updates_per_minute=10, post_every_s=5.0, speed=10.0)
HOUR = Failure("ratelimited", status=429, retry_after=3600)


async def test_a_burst_under_slacks_limits_is_answered_in_full_with_few_updates(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    settings = model_settings(settings, openai_standin)
    outcome = await run_burst(with_model(sample_engine, settings), settings, openai_standin, SMALL_BURST, limited=True)
    assert outcome.answered == outcome.asked == 40, outcome
    assert outcome.lost == 0 and outcome.busy == 0 and outcome.stale == 0
    updates, _ = outcome.calls["chat.update"]
    assert updates <= outcome.answered // 4, outcome  # progress gives way to answers; nothing is hammered
    posts, refused = outcome.calls["chat.postMessage"]
    assert refused <= outcome.answered, outcome  # one 429 at most per message: Retry-After is waited out
    assert outcome.last_answer_s < 2 * SMALL_BURST.floor_s, outcome


async def test_a_retry_after_on_progress_holds_no_answer_slot(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    """Bob waits for the only slot; when Alice's answer lands, Slack starts refusing chat.update for
    3 s. Bob's "Looking through the docs…" is progress: his question goes to the model at once."""
    asked_at: list[float] = []

    def reply(messages: object) -> str:
        asked_at.append(time.monotonic() - openai_standin.delay_s)
        return REPLY

    openai_standin.reply = reply
    openai_standin.delay_s = 0.5
    settings = model_settings(settings, openai_standin, bot_max_concurrent_answers=1)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        answered_at: list[float] = []

        async def on_call(call: Call) -> None:
            if call.method == "chat.update" and call.ok and REPLY in visible_text(call.params) and not answered_at:
                answered_at.append(call.at)
                local.standin.fail_next("chat.update", Failure("ratelimited", status=429, retry_after=3))

        local.standin.on_call = on_call
        await mention(local, demo.ALICE, demo.GENERAL, VPN)
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        assert len(asked_at) == 2 and asked_at[1] - answered_at[0] < 1.5  # not after a 3 s sleep in the slot
        posted = answers(local, demo.GENERAL)
        assert len(posted) == 2 and all(REPLY in visible_text(m) for m in posted)
        refused = [c for c in local.standin.calls if c.method == "chat.update" and c.status == 429]
        assert len(refused) == 1  # nothing asked Slack again before its Retry-After was up


async def test_an_hour_long_retry_after_is_not_waited_out_the_answer_is_posted_anew(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: REPLY
    openai_standin.delay_s = 0.5
    settings = model_settings(settings, openai_standin, bot_max_concurrent_answers=1)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        for _ in range(10):
            local.standin.fail_next("chat.update", HOUR)
        started = asyncio.get_running_loop().time()
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await mention(local, demo.EVE, demo.GENERAL, VPN)
        await local.settle()
        assert asyncio.get_running_loop().time() - started < 10
        bot_messages = [m for m in local.standin.messages[demo.GENERAL] if m.get("bot_id")]
        assert len(bot_messages) == 2 and all(REPLY in visible_text(m) for m in bot_messages)  # no placeholder left
        assert len(local.standin.calls_to("chat.update")) == 1  # the hour is remembered, not asked again
        assert not local.standin.calls_to("chat.postEphemeral")


async def test_an_hour_long_retry_after_everywhere_tells_the_asker_when_to_ask_again(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: REPLY
    async with local_slack(settings, with_model(sample_engine, model_settings(settings, openai_standin))) as local:
        for method in ("chat.update", "chat.postMessage"):
            for _ in range(10):
                local.standin.fail_next(method, HOUR)
        started = asyncio.get_running_loop().time()
        await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        assert asyncio.get_running_loop().time() - started < 10
        [note] = local.standin.calls_to("chat.postEphemeral", ok_only=True)
        assert note["user"] == demo.BOB and note["text"] == RATE_LIMITED.format(when="about 60 minutes")
        assert not [m for m in local.standin.messages[demo.GENERAL] if m.get("bot_id")]
        assert len(local.standin.calls_to("chat.postMessage")) == 1  # tried once, then the hour was remembered
