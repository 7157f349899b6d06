"""Benchmark: how fast a busy bot acknowledges Slack.

Runs the real `docsbot serve` in its own process, pointed at the Slack stand-in and at the OpenAI
stand-in (a model that takes 2 s), both served from this process along with the load: 50
different people mention the bot at once the moment `/readyz` first says ready (the first burst
after a start, which a load balancer sends a new replica), then once more, then 50 concurrent
`/docs` commands, each alongside 50 `/healthz` requests (the baseline: the cheapest request under
the same load). The bot runs with its default answer slots, so most questions wait in line. Slack
wants an ack within 3 s; the target here is p99 < 300 ms, every question answered, and nobody
told "busy".

It runs once per state store, side by side: the embedded SQLite file, and Postgres (a scratch
database on the server of --postgres, default $DOCSBOT_TEST_DATABASE_URL), where every event's
dedupe claim and every question's rate-limit take are a round trip to the database.

    python -m eval bench-acks [--n 50] [--model-delay 2.0] [--data-dir DIR] [--postgres URL]
"""
from __future__ import annotations

import argparse
import asyncio
import os
from contextlib import ExitStack
from dataclasses import dataclass, field
import socket
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

from bot.local import demo
from bot.answering import BUSY
from bot.app import EVENTS_PATH
from bot.deliveries import SlackDeliveries
from bot.local.standin import SlackStandIn, Workspace
from sync.folder import ensure_index
from foundation.settings import Settings
from foundation.wiring import lease_config, open_engine
from eval.scratch_db import scratch_database
from eval.standins.openai_server import OpenAIStandIn

TARGET_P99_S = 0.300
REPO = Path(__file__).resolve().parent.parent


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def line(name: str, values: list[float]) -> str:
    return (f"{name:<22} p50 {statistics.median(values) * 1000:7.1f} ms   p99 {percentile(values, 99) * 1000:7.1f} ms"
            f"   max {max(values) * 1000:7.1f} ms")


def crowd(n: int) -> tuple[Workspace, list[str]]:
    """The demo workspace with `n` more people in #general (public readers), and their ids."""
    ws = demo.demo_workspace()
    people = [f"U_P{i:03d}" for i in range(n)]
    for user in people:
        ws.add_user(user, user.lower(), f"{user.lower()}@contractor.invalid")
    ws.channels[demo.GENERAL]["members"].extend(people)
    return ws, people


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Load:
    def __init__(self, slack: SlackDeliveries, standin: SlackStandIn, base_url: str, people: list[str]) -> None:
        self.slack, self.standin, self.base_url, self.people = slack, standin, base_url, people

    async def healthz(self) -> float:
        started = time.perf_counter()
        async with self.slack.session.get(self.base_url + "/healthz") as response:
            await response.read()
        return time.perf_counter() - started

    async def mention(self, i: int) -> float:
        question = f"how do I set up the VPN? (#{i})"
        user = self.people[i] if i >= 0 else demo.BOB
        ts = self.standin.post_as_user(demo.GENERAL, user, question)
        delivered = await self.slack.event(self.slack.mention(user, demo.GENERAL, question, ts))
        assert delivered.status == 200, delivered
        return delivered.seconds

    async def command(self, i: int) -> float:
        delivered = await self.slack.command(demo.ALICE, demo.GENERAL, f"how do I set up the VPN? (#{i})")
        assert delivered.status == 200, delivered
        return delivered.seconds

    def answered(self) -> int:
        """Answers posted (a message with feedback controls), however many place-in-line updates."""
        return sum(1 for m in self.standin.messages[demo.GENERAL]
                   if any(b.get("block_id") == "feedback" for b in m.get("blocks") or []))

    def told_busy(self) -> int:
        return sum(1 for c in self.standin.calls_to("chat.postEphemeral") + self.standin.calls_to("chat.update")
                   if c.get("text") == BUSY) + sum(1 for r in self.standin.responses if r.get("text") == BUSY)

    async def settle(self, expected: int, timeout_s: float = 120) -> None:
        async with asyncio.timeout(timeout_s):
            while self.answered() < expected:
                await asyncio.sleep(0.05)


def serve_env(standin: SlackStandIn, model: OpenAIStandIn, port: int, data_dir: str) -> dict[str, str]:
    """The environment of a `docsbot serve` on `port` pointed at the two stand-ins (no LLM retries)."""
    return {"SLACK_BOT_TOKEN": demo.TOKEN, "SLACK_SIGNING_SECRET": demo.SIGNING_SECRET,
            "SLACK_API_URL": standin.base_url, "PORT": str(port), "OPENAI_BASE_URL": model.base_url,
            "DOCSBOT_DATA_DIR": data_dir, "DOCSBOT_DOCS_DIR": str(REPO / "docs-sync"),
            "DOCSBOT_ACCESS_FILE": str(demo.ACCESS_FILE), "DOCSBOT_LLM_MAX_RETRIES": "0"}


async def start_bot(env: dict[str, str], base_url: str) -> asyncio.subprocess.Process:
    """`docsbot serve`, returned the moment `/readyz` first answers 200 (polled every 50 ms)."""
    bot = await asyncio.create_subprocess_exec(sys.executable, "-m", "commands.cli", "serve", cwd=REPO,
                                               env={**os.environ, **env})
    async with aiohttp.ClientSession() as session:
        for _ in range(1200):
            try:
                async with session.get(base_url + "/readyz") as response:
                    if response.status == 200:
                        return bot
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    bot.terminate()
    raise RuntimeError("docsbot serve did not start")


@dataclass
class Run:
    """One run's figures (seconds), by request kind."""

    store: str
    acks: dict[str, list[float]] = field(default_factory=dict)
    health: dict[str, list[float]] = field(default_factory=dict)
    answered: dict[str, tuple[int, float]] = field(default_factory=dict)  # answered, within seconds
    told_busy: int = 0

    @property
    def ok(self) -> bool:
        return self.told_busy == 0 and all(percentile(acks, 99) < TARGET_P99_S for acks in self.acks.values())


async def bench(n: int, delay_s: float, data_dir: str, store: str, database_url: str | None) -> Run:
    docs = REPO / "docs-sync"
    settings = Settings(_env_file=None, data_dir=data_dir)
    ensure_index(open_engine(settings), lease_config(settings), docs)
    model = OpenAIStandIn().start()
    model.reply = lambda messages: "Use the VPN portal [1]."
    model.delay_s = delay_s
    workspace, people = crowd(n)
    standin = await SlackStandIn(workspace, demo.TOKEN).start()
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    env = serve_env(standin, model, port, data_dir) | {"DOCSBOT_BOT_USER_QUESTIONS_PER_MINUTE": str(10 * n)}
    if database_url:
        env["DOCSBOT_DATABASE_URL"] = database_url
    bot = await start_bot(env, base_url)
    run = Run(store)
    try:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as session:
            ws = standin.workspace
            slack = SlackDeliveries(session, base_url + EVENTS_PATH, demo.SIGNING_SECRET, ws.team_id,
                                    ws.bot_user_id, standin.response_url)
            load = Load(slack, standin, base_url, people)
            print(f"\n{store}: docsbot serve (pid {bot.pid}); {n} concurrent requests of each kind; "
                  f"the model answers in {delay_s:.1f} s")
            for kind, send in (("first mentions", load.mention), ("mention", load.mention),
                               ("/docs command", load.command)):
                before = load.answered()
                started = time.perf_counter()
                results = await asyncio.gather(*[send(i) for i in range(n)], *[load.healthz() for _ in range(n)])
                run.acks[kind], run.health[kind] = list(results[:n]), list(results[n:])
                await load.settle(before + n)
                run.answered[kind] = (load.answered() - before, time.perf_counter() - started)
                print(line(f"{kind} ack", run.acks[kind]))
                print(line("/healthz, same load", run.health[kind]))
                run.told_busy = load.told_busy()
                if kind == "first mentions":
                    print(line("/healthz, idle", [await load.healthz() for _ in range(n)]))
    finally:
        bot.terminate()
        await bot.wait()
        await standin.stop()
        model.stop()
    return run


def side_by_side(runs: list[Run], n: int) -> None:
    print(f"\n{'state store':<12} {'kind':<14} {'ack p50':>8} {'ack p99':>8} {'healthz p99':>12} {'answered':>16}")
    for run in runs:
        for kind, acks in run.acks.items():
            answered, within = run.answered[kind]
            print(f"{run.store:<12} {kind:<14} {statistics.median(acks) * 1000:6.1f}ms "
                  f"{percentile(acks, 99) * 1000:6.1f}ms "
                  f"{percentile(run.health[kind], 99) * 1000:10.1f}ms {answered:>4}/{n} in {within:4.1f}s")
    if len(runs) == 2:
        for kind in runs[0].acks:
            ratio = percentile(runs[1].acks[kind], 99) / percentile(runs[0].acks[kind], 99)
            print(f"{kind} p99 ack, {runs[1].store} / {runs[0].store} = {ratio:.2f}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval bench-acks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["bench-acks"])
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--model-delay", type=float, default=2.0)
    parser.add_argument("--data-dir", help="index folder (default: a fresh temporary one, indexed first)")
    parser.add_argument("--postgres", default=os.environ.get("DOCSBOT_TEST_DATABASE_URL", ""),
                        help="a Postgres server URL to run against too (default: $DOCSBOT_TEST_DATABASE_URL)")
    args = parser.parse_args(argv)
    runs: list[Run] = []
    with tempfile.TemporaryDirectory() as scratch, ExitStack() as stack:
        stores: list[tuple[str, str | None]] = [("SQLite", None)]
        if args.postgres:
            stores.append(("Postgres", stack.enter_context(scratch_database(args.postgres, "docsbot_bench"))))
        for store, url in stores:
            runs.append(asyncio.run(bench(args.n, args.model_delay, args.data_dir or scratch, store, url)))
    side_by_side(runs, args.n)
    ok = all(run.ok for run in runs)
    print("PASS" if ok else "FAIL",
          f"(target: p99 ack < {TARGET_P99_S * 1000:.0f} ms; every question answered; nobody told busy)")
    return 0 if ok else 1

