"""`python -m eval bench-ratelimits`: a burst of questions under Slack's rate limits.

100 people ask 2 questions each, all at once, in one channel: the real bot (its aiohttp app,
requests signed as Slack signs them, the real index and retrieval) against the Slack stand-in
limiting `chat.update` to 50 calls a minute (Tier 3's floor) and `chat.postMessage` to one a
second per channel, with HTTP 429 and Retry-After past them; the model (OpenAI stand-in) takes
2 s. The same burst against the unlimited stand-in, in the same run, is the baseline. For each:
answered / lost / busy, placeholders left behind, Web API calls per answer (and how many Slack
refused), the time to the last answer and, under the limits, Slack's floor for it: every
question needs one `chat.postMessage` in the channel (its placeholder or its answer).

Time is scaled (--speed: Slack seconds per real second): the stand-in's clock runs faster and
its Retry-After comes in real seconds; the model's delay and the queue's wait limit are scaled
alike, so the ratio of limits to load is Slack's. The bot's own constants are not scaled:
progress edits (bot.progress) get a bigger share of Slack's budget than at speed 1, the harder
case; the Retry-After cap and the answer's budget (bot.ratelimits) never bind here (the longest
Retry-After is printed). `--speed 1` runs in Slack's real time (about 4 minutes).
"""
from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bot.local import demo
from bot.answering import BUSY
from eval.bench_acks import crowd
from bot.blocks import is_placeholder
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import Call, Limit
from foundation.settings import Settings
from foundation.wiring import lease_config, open_engine, rag_config
from rag import Engine
from sync.folder import ensure_index
from eval.standins.openai_server import OpenAIStandIn

REPO = Path(__file__).resolve().parent.parent
REPLY = "Use the VPN portal [1]."
_ANSWER_CALLS = ("chat.update", "chat.postMessage")


@dataclass(frozen=True)
class Burst:
    """Questions asked at once in one channel, and Slack's limits (in Slack seconds)."""

    people: int = 100
    per_person: int = 2
    updates_per_minute: int = 50  # chat.update, for the workspace (Tier 3's floor)
    post_every_s: float = 1.0  # chat.postMessage: one per this many seconds, per channel
    model_s: float = 2.0
    queue_wait_s: float = 120.0  # DOCSBOT_QUEUE_WAIT_S
    speed: float = 4.0

    @property
    def questions(self) -> int:
        return self.people * self.per_person

    @property
    def floor_s(self) -> float:
        """The least time Slack allows for it: one chat.postMessage per question in the channel."""
        return (self.questions - 1) * self.post_every_s

    def limits(self) -> dict[str, Limit]:
        return {"chat.update": Limit(self.updates_per_minute, 60.0),
                "chat.postMessage": Limit(1, self.post_every_s, per_channel=True)}


@dataclass
class Outcome:
    asked: int
    answered: int
    busy: int
    stale: int  # placeholders still in the channel, never replaced
    calls: dict[str, tuple[int, int]]  # method: (calls, of which refused with a 429)
    last_answer_s: float  # Slack seconds from the burst to the last answer
    longest_retry_after_s: float

    @property
    def lost(self) -> int:
        """Neither answered nor told busy: the placeholder was deleted or the asker told it failed."""
        return self.asked - self.answered - self.busy

    def per_answer(self, method: str) -> float:
        return self.calls.get(method, (0, 0))[0] / max(1, self.answered)


def _has_feedback(params: dict[str, Any]) -> bool:
    return any(b.get("block_id") == "feedback" for b in params.get("blocks") or [])


async def _ask(local: LocalSlack, user: str, text: str) -> str:
    ts = local.standin.post_as_user(demo.GENERAL, user, f"<@{local.standin.workspace.bot_user_id}> {text}")
    delivered = await local.slack.event(local.slack.mention(user, demo.GENERAL, text, ts))
    assert delivered.status == 200, delivered
    return ts


def _outcome(local: LocalSlack, asked: list[str], started: float, speed: float) -> Outcome:
    standin = local.standin
    threads = set(asked)
    replies = [m for m in standin.messages[demo.GENERAL] if m.get("bot_id") and m.get("thread_ts") in threads]
    answered = {m["thread_ts"] for m in replies if _has_feedback(m)}
    busy = {c["thread_ts"] for c in standin.calls_to("chat.postEphemeral") if c.get("text") == BUSY}
    busy |= {m["thread_ts"] for m in replies if m.get("text") == BUSY}
    calls: list[Call] = [c for c in standin.calls if c.at >= started]
    answer_times = [c.at for c in calls if c.ok and c.method in _ANSWER_CALLS and _has_feedback(c.params)]
    return Outcome(
        asked=len(asked), answered=len(answered), busy=len(busy - answered),
        stale=sum(1 for m in replies if is_placeholder(m.get("text", ""))),
        calls={method: (sum(1 for c in calls if c.method == method),
                        sum(1 for c in calls if c.method == method and c.status == 429))
               for method in (*_ANSWER_CALLS, "chat.delete", "chat.postEphemeral")},
        last_answer_s=(max(answer_times) - started) * speed if answer_times else float("nan"),
        longest_retry_after_s=max((c.retry_after or 0.0 for c in calls), default=0.0),
    )


async def run_burst(engine: Engine, base: Settings, model: OpenAIStandIn, burst: Burst, limited: bool) -> Outcome:
    """The burst through the real bot; `engine` (built from `base`) answers through `model` (the OpenAI stand-in)."""
    model.reply = lambda messages: REPLY
    model.delay_s = burst.model_s / burst.speed
    settings = base.model_copy(update={
        "queue_wait_s": burst.queue_wait_s / burst.speed,
        "bot_user_questions_per_minute": 10 * burst.per_person,
    })
    workspace, people = crowd(burst.people)
    async with local_slack(settings, replace(engine, config=rag_config(settings)), workspace=workspace) as local:
        await _ask(local, demo.ALICE, "how do I set up the VPN?")  # warm up: first lookups, the index opened
        await local.settle()
        local.standin.speed = burst.speed
        if limited:
            local.standin.limits = burst.limits()
        started = time.monotonic()
        asked = await asyncio.gather(*[_ask(local, user, f"how do I set up the VPN? (#{n}, {user})")
                                       for n in range(burst.per_person) for user in people])
        await local.settle((3 * burst.floor_s + burst.queue_wait_s) / burst.speed + 60)
        return _outcome(local, list(asked), started, burst.speed)


def _row(name: str, o: Outcome) -> str:
    update, post = o.calls["chat.update"], o.calls["chat.postMessage"]
    return (f"{name:<20} {o.answered:>4}/{o.asked:<4} {o.lost:>5} {o.busy:>5} {o.stale:>6}"
            f"   {o.per_answer('chat.update'):5.2f} ({update[1]:>3} refused)"
            f"   {o.per_answer('chat.postMessage'):5.2f} ({post[1]:>3} refused)   {o.last_answer_s:6.0f} s")


def report(burst: Burst, baseline: Outcome, limited: Outcome) -> str:
    lines = [
        f"{burst.questions} questions from {burst.people} people at once in one channel; the model takes "
        f"{burst.model_s:g} s; Slack's limits: chat.update {burst.updates_per_minute}/min, chat.postMessage 1 per "
        f"{burst.post_every_s:g} s per channel; time x{burst.speed:g} (Slack seconds shown)",
        f"{'':<20} {'answered':>9} {'lost':>5} {'busy':>5} {'stale':>6}   {'chat.update/answer':<22}"
        f"   {'postMessage/answer':<22}   last answer",
        _row("unlimited stand-in", baseline),
        _row("Slack's limits", limited),
        f"limited / unlimited: chat.update calls per answer "
        f"{limited.per_answer('chat.update') / max(baseline.per_answer('chat.update'), 1e-9):.2f}, "
        f"time to the last answer {limited.last_answer_s / baseline.last_answer_s:.1f}x; "
        f"Slack's floor under the limits {burst.floor_s:.0f} s (last answer at "
        f"{limited.last_answer_s / max(burst.floor_s, 1e-9):.2f}x it); longest Retry-After "
        f"{limited.longest_retry_after_s:.0f} s",
    ]
    return "\n".join(lines)


def passed(outcome: Outcome) -> bool:
    """Every question answered: none lost, nobody told busy, no placeholder left behind."""
    return outcome.answered == outcome.asked and outcome.stale == 0


async def bench(burst: Burst, data_dir: str) -> tuple[Outcome, Outcome]:
    model = OpenAIStandIn().start()
    try:
        settings = Settings(_env_file=None, data_dir=data_dir, openai_base_url=model.base_url, llm_max_retries=0,
                            llm_attempt_timeout_s=10.0)
        engine = open_engine(settings)
        ensure_index(engine, lease_config(settings), REPO / "docs-sync")
        baseline = await run_burst(engine, settings, model, burst, limited=False)
        limited = await run_burst(engine, settings, model, burst, limited=True)
    finally:
        model.stop()
    return baseline, limited


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-ratelimits", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["bench-ratelimits"])
    parser.add_argument("--people", type=int, default=Burst.people)
    parser.add_argument("--per-person", type=int, default=Burst.per_person)
    parser.add_argument("--speed", type=float, default=Burst.speed, help="Slack seconds per real second")
    parser.add_argument("--data-dir", help="index folder (default: a fresh temporary one, indexed first)")
    args = parser.parse_args(argv)
    burst = Burst(people=args.people, per_person=args.per_person, speed=args.speed)
    with tempfile.TemporaryDirectory(prefix="docsbot-bench-") as scratch:
        baseline, limited = asyncio.run(bench(burst, args.data_dir or scratch))
    print(report(burst, baseline, limited))
    ok = passed(limited)
    print("PASS" if ok else "FAIL", "(under Slack's limits every question answered: none lost, nobody busy, "
                                    "no placeholder left)")
    return 0 if ok else 1
