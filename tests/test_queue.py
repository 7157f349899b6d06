"""Waiting in line for an answer slot: the queue on its own (fairness, limits, timeouts), and the
bars through the real app: 50 people at once are all answered, a full line turns away exactly the
overflow, and the placeholder shows (and updates) the place in line."""
from __future__ import annotations

import asyncio
import time
from typing import Any

from bot.local import demo
from bot.answering import BUSY
from bot.blocks import THINKING, in_line
from eval.bench_acks import crowd as crowd_workspace
from eval.bench_acks import percentile
from bot.queue import AnswerQueue
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import Workspace, visible_text
from foundation.settings import Settings
from rag.engine import Engine
from eval.standins.openai_server import OpenAIStandIn
from tests.support.slack import VPN, answers, mention, model_settings, with_model
from tests.support.waiting import until

def crowd() -> Workspace:
    """The demo workspace with 50 more people in #general (as in the ack benchmark)."""
    return crowd_workspace(50)[0]


PEOPLE = crowd_workspace(50)[1]


# -- the queue on its own ----------------------------------------------------------------------------


async def test_one_persons_burst_waits_behind_everyone_elses_first_question() -> None:
    queue = AnswerQueue(slots=1, max_waiting=10, wait_s=10, tell_every_s=0)
    served: list[str] = []
    release = asyncio.Event()
    ahead_told: dict[str, list[int]] = {}

    async def ask(user: str, n: int, hold: bool = False) -> None:
        async def moved(ahead: int) -> None:
            ahead_told.setdefault(f"{user}{n}", []).append(ahead)

        async with queue.turn(user, moved) as turn:
            assert turn.admitted
            served.append(f"{user}{n}")
            if hold:
                await release.wait()

    first = asyncio.create_task(ask("A", 0, hold=True))
    await asyncio.sleep(0.01)
    burst = [asyncio.create_task(ask("A", n)) for n in range(1, 5)]
    await asyncio.sleep(0.01)
    others = [asyncio.create_task(ask("B", 1)), asyncio.create_task(ask("C", 1))]
    await asyncio.sleep(0.01)
    assert queue.depth == 6 and queue.saturated
    assert ahead_told["B1"] == [1] and ahead_told["C1"] == [2]  # behind A1 only, not A1..A4
    release.set()
    await asyncio.gather(first, *burst, *others)
    assert served == ["A0", "A1", "B1", "C1", "A2", "A3", "A4"]
    told = ahead_told["A4"]  # on entering, when B and C went ahead of it, and as the line moved
    assert told[:2] == [3, 5] and told[1:] == sorted(told[1:], reverse=True)
    assert queue.depth == 0 and not queue.saturated


async def test_a_full_line_and_a_long_wait_are_refused() -> None:
    queue = AnswerQueue(slots=1, max_waiting=1, wait_s=0.2)
    release = asyncio.Event()

    async def hold() -> None:
        async with queue.turn("A"):
            await release.wait()

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0.01)

    async def wait() -> str:
        async with queue.turn("B") as turn:
            return turn.refused

    waiter = asyncio.create_task(wait())
    await asyncio.sleep(0.01)
    async with queue.turn("C") as turn:
        assert not turn.admitted and turn.refused == "full"
    assert await waiter == "timeout"
    assert queue.depth == 0
    release.set()
    await holder
    async with queue.turn("D") as turn:  # the slot came back
        assert turn.admitted and queue.saturated
    assert not queue.saturated


async def test_a_cancelled_wait_passes_its_slot_on() -> None:
    queue = AnswerQueue(slots=1, max_waiting=5, wait_s=5)
    release = asyncio.Event()

    async def hold(user: str) -> None:
        async with queue.turn(user):
            await release.wait()

    holder = asyncio.create_task(hold("A"))
    await asyncio.sleep(0.01)
    cancelled = asyncio.create_task(hold("B"))
    after = asyncio.create_task(hold("C"))
    await asyncio.sleep(0.01)
    cancelled.cancel()
    await asyncio.sleep(0.01)
    assert queue.depth == 1
    release.set()
    await asyncio.gather(holder, after)
    assert not queue.saturated and queue.depth == 0


# -- through the real app --------------------------------------------------------------------------


async def test_fifty_people_at_once_are_all_answered_and_nobody_is_told_busy(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    """The acks wait for nothing but the event loop: 50 mentions are acknowledged about as fast as
    50 `/healthz` requests sent with them, and well inside Slack's 3 s.

    Here the senders, the Slack stand-in and the bot share one event loop, so a burst's acks all
    come back when the loop has done the whole burst's work (a few ms of CPU per signed request):
    on a busy 2-core machine 49 of 50 acks arrived together at 0.75 s, with no callback over
    100 ms (asyncio debug mode). A fixed 300 ms bar measured the machine, not the bot; the 300 ms
    target is for `docsbot serve` in its own process (`python -m eval bench-acks`)."""
    openai_standin.reply = lambda messages: "Use the VPN portal [1]."
    openai_standin.delay_s = 2.0
    settings = model_settings(settings, openai_standin)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine, workspace=crowd()) as local:
        await mention(local, demo.ALICE, demo.GENERAL, VPN)  # warm up (first lookups, the index opened)
        await local.settle()
        local.standin.calls.clear()
        started = asyncio.get_running_loop().time()
        mentioned, baseline = await asyncio.gather(
            asyncio.gather(*[mention(local, u, demo.GENERAL, VPN) for u in PEOPLE]),
            asyncio.gather(*[healthz(local) for _ in PEOPLE]))
        acks = [seconds for _, seconds in mentioned]
        await local.settle(90)
        elapsed = asyncio.get_running_loop().time() - started
        assert percentile(acks, 99) < 1.5, sorted(acks)[-5:]  # half of Slack's 3 s
        slowest = (sorted(acks)[-5:], sorted(baseline)[-5:])
        assert percentile(acks, 99) < 1.5 * percentile(baseline, 99) + 0.1, slowest
        assert elapsed < 90
        assert not local.standin.calls_to("chat.postEphemeral")
        asked = {m["ts"] for m in local.standin.messages[demo.GENERAL] if m.get("user") in PEOPLE}
        posted = [m for m in answers(local, demo.GENERAL) if m["thread_ts"] in asked]
        assert len(posted) == 50 and all("Use the VPN portal [1]." in visible_text(m) for m in posted)


async def healthz(local: LocalSlack) -> float:
    """Seconds for one `/healthz`: the cheapest request, the baseline under the same load."""
    started = time.perf_counter()
    async with local.slack.session.get(local.base_url + "/healthz") as response:
        assert response.status == 200
    return time.perf_counter() - started


async def test_a_full_line_turns_away_exactly_the_overflow(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: "Use the VPN portal [1]."
    openai_standin.delay_s = 4.0  # nobody finishes while the 50 arrive
    settings = model_settings(settings, openai_standin, queue_max=10)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine, workspace=crowd()) as local:
        await asyncio.gather(*[mention(local, u, demo.GENERAL, VPN) for u in PEOPLE])
        await local.settle(90)
        busy = [c for c in local.standin.calls_to("chat.postEphemeral") if c["text"] == BUSY]
        posted = answers(local, demo.GENERAL)
        assert len({c["user"] for c in busy}) == len(busy) == 50 - 8 - 10
        assert len(posted) == 8 + 10 and all("Use the VPN portal [1]." in visible_text(m) for m in posted)


async def test_the_placeholder_shows_the_place_in_line_and_follows_it(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: "Use the VPN portal [1]."
    openai_standin.delay_s = 1.0
    settings = model_settings(settings, openai_standin, bot_max_concurrent_answers=1)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        for asked, user in enumerate((demo.ALICE, demo.BOB, demo.EVE), start=1):
            question, _ = await mention(local, user, demo.GENERAL, VPN)
            # Each question is in line before the next is asked: on a loaded machine a fixed pause
            # let Eve's question reach the queue before Bob's.
            await until(lambda: len(local.standin.calls_to("chat.postMessage")) >= asked, 30, "no placeholder")
        third = local.standin.calls_to("chat.postMessage")[-1]
        assert third["text"] == in_line(1) and "1 question ahead of you" in third["text"]
        assert not local.standin.calls_to("chat.postEphemeral")  # nobody is turned away
        await local.settle()
        [ts] = [m["ts"] for m in answers(local, demo.GENERAL) if m["thread_ts"] == question]
        shown = [u["text"] for u in local.standin.calls_to("chat.update") if u["ts"] == ts]
        assert shown[0] in (in_line(0), THINKING) and THINKING in shown and "Use the VPN portal [1]." in shown[-1]


async def test_the_place_in_line_is_told_at_most_every_few_seconds() -> None:
    queue = AnswerQueue(slots=1, max_waiting=10, wait_s=10, tell_every_s=0.3)
    told: list[tuple[int, float]] = []
    loop = asyncio.get_running_loop()

    async def ask(user: str, hold: bool, moved: Any = None) -> None:
        async with queue.turn(user, moved):
            if hold:
                await asyncio.sleep(0.05)

    async def note(ahead: int) -> None:
        told.append((ahead, loop.time()))

    tasks = [asyncio.create_task(ask(f"U{i}", True)) for i in range(6)]
    await asyncio.sleep(0.01)
    last = asyncio.create_task(ask("LAST", False, note))
    await asyncio.gather(*tasks, last)
    aheads = [ahead for ahead, _ in told]
    gaps = [b - a for (_, a), (_, b) in zip(told, told[1:])]
    assert aheads[0] == 5 and aheads == sorted(aheads, reverse=True) and len(aheads) < 6
    assert all(gap >= 0.29 for gap in gaps)
