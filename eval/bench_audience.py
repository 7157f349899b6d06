"""`python -m eval bench-audience`: what confirming audiences costs an answer (issue 35).

Questions in private channels (--channels of --members people each, all `team`, so every answer
may use a team document), one every --every-s seconds in each channel for --minutes, on a
simulated clock: the bot's Directory (bot/directory.py) against the Slack stand-in and a real
state database (a SQLite file, or --database-url), twice in the same run: as before issue 35
(the lookup cache alone, DOCSBOT_BOT_LOOKUP_TTL_S) and now (the change log read before each
answer, and an audience above `public` re-confirmed after DOCSBOT_AUDIENCE_FRESH_S). Prints each
mode's Slack calls per answer, the extra calls now and their ratio to before, and the wall time
of the per-answer log read and of an answer's lookups (p50 / p99, ms).
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import SecretStr

from bot.access import AccessFile, load_access
from bot.app import web_client
from bot.directory import Directory
from bot.local import demo
from bot.local.standin import SlackStandIn
from bot.telemetry import close_client
from foundation.settings import Settings
from rag import Level
from state.audience import AudienceChanges
from state.opening import open_state
from eval.clock import Clock

ASKER = demo.BOB  # team, a member of every channel


@dataclass(frozen=True)
class Load:
    channels: int = 20
    members: int = 30
    every_s: float = 60.0  # a question in each channel this often (simulated seconds)
    minutes: float = 30.0
    ttl_s: float = Settings.model_fields["bot_lookup_ttl_s"].default
    fresh_s: float = Settings.model_fields["audience_fresh_s"].default


@dataclass
class Mode:
    answers: int = 0
    slack_calls: Counter[str] = field(default_factory=Counter)
    lookups_ms: list[float] = field(default_factory=list)  # an answer's follow_changes, user_level, audience
    check_ms: list[float] = field(default_factory=list)  # its follow_changes alone

    @property
    def per_answer(self) -> float:
        return sum(self.slack_calls.values()) / max(1, self.answers)


def workspace_for(load: Load) -> tuple[SlackStandIn, list[str]]:
    ws = demo.demo_workspace()
    people = [f"U_P{i:03d}" for i in range(load.members - 1)]
    for user in people:
        ws.add_user(user, user.lower(), f"{user.lower()}@example.com")
    channels = [f"C_PRIV{i:03d}" for i in range(load.channels)]
    for channel in channels:
        ws.add_channel(channel, channel.lower(), [ASKER, *people, ws.bot_user_id], is_private=True)
    return SlackStandIn(ws, demo.TOKEN), channels


async def run_mode(load: Load, database_url: str, now: bool) -> Mode:
    """One mode over the whole load, on its own stand-in and (now) a fresh change log."""
    standin, channels = workspace_for(load)
    await standin.start()
    db = await open_state(database_url) if now else None
    settings = Settings(_env_file=None, SLACK_BOT_TOKEN=SecretStr(demo.TOKEN), SLACK_API_URL=standin.base_url)
    client = web_client(settings)
    clock = Clock()
    directory = Directory(client, AccessFile.fixed(load_access(demo.ACCESS_FILE)), load.ttl_s,
                          load.fresh_s if now else None, AudienceChanges(db) if db else None, clock)
    mode = Mode()
    try:
        end = clock.now + load.minutes * 60
        while clock.now < end:
            for channel in channels:
                started = time.perf_counter()
                await directory.follow_changes()
                checked = time.perf_counter()
                asker = await directory.user_level(ASKER)
                await directory.audience(channel, asker or Level.public)
                mode.check_ms.append((checked - started) * 1000)
                mode.lookups_ms.append((time.perf_counter() - started) * 1000)
                mode.answers += 1
            clock.now += load.every_s
        mode.slack_calls = Counter(call.method for call in standin.calls)
    finally:
        await close_client(client)
        await standin.stop()
        if db is not None:
            await db.close()
    return mode


def ms(values: list[float], q: float) -> float:
    ordered = sorted(values or [0.0])
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(load: Load, before: Mode, after: Mode, backend: str) -> str:
    extra = after.per_answer - before.per_answer
    ratio = after.per_answer / before.per_answer if before.per_answer else float("inf")
    lines = [f"{load.channels} private channels x {load.members} members, a question every {load.every_s:g} s "
             f"in each for {load.minutes:g} min ({after.answers} answers); TTL {load.ttl_s:g} s, "
             f"fresh {load.fresh_s:g} s; change log on {backend}",
             f"{'mode':<8} {'Slack calls/answer':>19} {'lookups p50':>12} {'p99':>8} {'log read p50':>13} "
             f"{'p99':>8}  calls"]
    for name, mode in (("before", before), ("now", after)):
        calls = ", ".join(f"{m} {n}" for m, n in sorted(mode.slack_calls.items()))
        lines.append(f"{name:<8} {mode.per_answer:>19.3f} {ms(mode.lookups_ms, .5):>10.2f}ms "
                     f"{ms(mode.lookups_ms, .99):>6.2f}ms {ms(mode.check_ms, .5):>11.2f}ms "
                     f"{ms(mode.check_ms, .99):>6.2f}ms  {calls}")
    lines.append(f"extra Slack calls per answer: {extra:+.3f} (ratio now/before {ratio:.2f}x); "
                 f"one state query per answer, median {statistics.median(after.check_ms or [0.0]):.2f} ms")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-audience", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["bench-audience"])
    parser.add_argument("--channels", type=int, default=Load.channels)
    parser.add_argument("--members", type=int, default=Load.members)
    parser.add_argument("--every-s", type=float, default=Load.every_s, help="seconds between questions in a channel")
    parser.add_argument("--minutes", type=float, default=Load.minutes, help="simulated minutes")
    parser.add_argument("--fresh-s", type=float, default=Load.fresh_s, help="DOCSBOT_AUDIENCE_FRESH_S")
    parser.add_argument("--database-url", help="the change log's database (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    load = Load(channels=args.channels, members=args.members, every_s=args.every_s, minutes=args.minutes,
                fresh_s=args.fresh_s)
    with tempfile.TemporaryDirectory(prefix="docsbot-bench-") as scratch:
        url = args.database_url or f"sqlite:///{Path(scratch) / 'state.db'}"
        before = asyncio.run(run_mode(load, url, now=False))
        after = asyncio.run(run_mode(load, url, now=True))
    print(report(load, before, after, url.split(":", 1)[0]))
    return 0
