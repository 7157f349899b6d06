"""One bot, many processes, run from the outside: two `docsbot serve` replicas (A and B), a
`docsbot sync --watch` worker and its hot standby, all real processes configured only by the
variables a team sets (DOCSBOT_DATABASE_URL, DOCSBOT_DATA_DIR=s3://…, AWS_*, DOCSBOT_REPO,
DOCSBOT_WEBHOOK_SECRET), against Postgres (a fresh database), a local S3 server, a real git
repository and the Slack stand-in.

Every promise of the single-process bot must hold across them: one answer per Slack message
whichever replica gets which delivery, one 👎 candidate per answer with every vote kept, one rate
limit for all replicas, a push during a sync applied by the next run and then cited by the other
replica, and a worker killed mid-sync replaced by the standby while both replicas keep answering.
A replica also keeps answering from its local mirror of the index while the bucket is down.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select

from bot.local import demo
from bot.app import EVENTS_PATH
from bot.blocks import FEEDBACK_DOWN, is_placeholder
from bot.deliveries import SlackDeliveries, buttons
from bot.local.standin import SlackStandIn, visible_text
from eval.repos import commit_files
from state.answers import AnswerLog
from state.db import StateDB
from state.opening import open_state
from state.leases import Leases
from state.ratelimit import RateWindow
from state.sync_requests import SyncRequest
from sync.lease import INDEX_WRITER
from sync.status import recorded_status
from tests.standins.s3 import LocalS3
from tests.support.slack import final_updates
from tests.support.sync import indexed_commit, new_repo
from tests.support.waiting import until

REPO = Path(__file__).resolve().parent.parent
SECRET = "scaleout-hook-secret"
PER_MINUTE = 3
VPN_Q = "how do I set up the VPN?"
BUCKET_DOWN = "cannot read the index bucket"
PARKING_Q = "where do visitors park?"
DOCS = {
    "it/vpn.md": "# VPN Setup\n\nSet up the VPN from the VPN portal at vpn.example.com with your laptop.\n",
    "handbook/vacation.md": "# Vacation Policy\n\nEvery employee gets 25 vacation days per calendar year.\n",
    "ops/oncall.md": "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n",
}


def filler(batch: str, n: int) -> dict[str, str]:
    """Documents that make a sync take a while (every text is new, so every chunk is embedded)."""
    return {f"archive/{batch}/note-{i:03d}.md":
            f"# Archive note {batch} {i}\n\nRecord {i} of batch {batch}: the {i}th meeting of the {batch} "
            f"working group reviewed item {i * 7} and closed ticket {batch}-{i * 13}.\n" for i in range(n)}


def new_event_id() -> str:
    """Slack's event ids are unique across the workspace (each replica's deliveries would number
    theirs from 1, and the replicas' shared dedupe would then take two events for one)."""
    return f"Ev{uuid.uuid4().hex[:12].upper()}"


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class Cluster:
    tmp: Path
    source: Path
    s3: LocalS3
    db_url: str
    standin: SlackStandIn
    http: aiohttp.ClientSession
    db: StateDB
    per_minute: int = 1000
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    deliveries: dict[str, SlackDeliveries] = field(default_factory=dict)

    def env(self, name: str) -> dict[str, str]:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "SLACK_", "OPENAI_", "AWS_"))}
        return base | self.s3.env() | {
            "PYTHONPATH": str(REPO),
            "DOCSBOT_DATABASE_URL": self.db_url,
            "DOCSBOT_DATA_DIR": self.s3.uri("team/index"),
            "DOCSBOT_WORK_DIR": str(self.tmp / f"work-{name}"),  # each host has its own disk
            "DOCSBOT_REPO": self.source.as_uri(),  # a URL, as a git host's: no file watcher
            "DOCSBOT_BRANCH": "main",
            "DOCSBOT_WEBHOOK_SECRET": SECRET,
            "DOCSBOT_DEFAULT_LEVEL": "public",
            "DOCSBOT_INDEX_REFRESH_S": "2",
            "DOCSBOT_METRICS_PORT": "0",  # the worker and its standby share this host's ports
            "DOCSBOT_SYNC_LEASE_TTL_S": "6",
            "DOCSBOT_SYNC_LEASE_RENEW_S": "1.5",
            "DOCSBOT_SYNC_INTERVAL_MINUTES": "60",
            "DOCSBOT_BOT_USER_QUESTIONS_PER_MINUTE": str(self.per_minute),
            "DOCSBOT_ACCESS_FILE": str(demo.ACCESS_FILE),
            "SLACK_BOT_TOKEN": demo.TOKEN,
            "SLACK_SIGNING_SECRET": demo.SIGNING_SECRET,
            "SLACK_API_URL": self.standin.base_url,
        }

    def start(self, name: str, *args: str) -> None:
        env = self.env(name)
        if args[0] == "serve":
            self.ports[name] = free_port()
            env["PORT"] = str(self.ports[name])
        log = open(self.tmp / f"{name}.log", "w")
        self.procs[name] = subprocess.Popen([sys.executable, "-m", "commands.cli", *args], env=env, cwd=self.tmp,
                                            stdout=log, stderr=subprocess.STDOUT)

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    async def healthy(self, name: str, timeout_s: float = 90) -> None:
        async def up() -> bool:
            assert self.procs[name].poll() is None, self.log(name)
            try:
                async with self.http.get(self.url(name, "/healthz")) as response:
                    return response.status == 200
            except aiohttp.ClientError:
                return False

        await until(up, timeout_s, f"{name} did not start")

    def url(self, name: str, path: str) -> str:
        return f"http://127.0.0.1:{self.ports[name]}{path}"

    def slack(self, name: str) -> SlackDeliveries:
        """Deliveries to one replica."""
        if name not in self.deliveries:
            ws = self.standin.workspace
            self.deliveries[name] = SlackDeliveries(self.http, self.url(name, EVENTS_PATH), demo.SIGNING_SECRET,
                                                    ws.team_id, ws.bot_user_id, self.standin.response_url)
        return self.deliveries[name]

    async def push(self, name: str) -> None:
        body = json.dumps({"ref": "refs/heads/main"}).encode()
        signature = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
        async with self.http.post(self.url(name, "/hooks/git"), data=body,
                                  headers={"X-Hub-Signature-256": signature, "X-GitHub-Event": "push"}) as response:
            assert response.status == 202, await response.text()

    async def writer_pid(self) -> int | None:
        lease = await Leases(self.db).current(INDEX_WRITER)
        return int(lease.holder.split(":")[1]) if lease else None

    async def requests(self) -> list[SyncRequest]:
        async with self.db.begin() as session:
            return list(await session.scalars(select(SyncRequest).order_by(SyncRequest.id)))

    def answers_to(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """The bot's answers (final updates of its placeholders) to a message: in its thread, or
        anywhere in a DM (answered at the top level)."""
        dm = self.standin.workspace.channels[channel].get("is_im")
        placeholders = {m["ts"] for m in self.standin.messages.get(channel, [])
                        if m.get("bot_id") and (dm or m.get("thread_ts") == ts)}
        return [c for c in final_updates(self.standin) if c["channel"] == channel and c["ts"] in placeholders]

    def bot_replies(self, channel: str) -> list[dict[str, Any]]:
        return [m for m in self.standin.messages.get(channel, []) if m.get("bot_id") and not is_placeholder(m["text"])]


@asynccontextmanager
async def cluster(tmp_path: Path, s3: LocalS3, db_url: str, per_minute: int = 1000) -> AsyncIterator[Cluster]:
    source = new_repo(tmp_path / "upstream")
    subprocess.run(["git", "checkout", "-q", "-b", "main"], cwd=source, check=True)
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    db = await open_state(db_url)
    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    c = Cluster(tmp_path, source, s3, db_url, standin, http, db, per_minute)
    try:
        yield c
    finally:
        for proc in c.procs.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in c.procs.values():
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        await http.close()
        await db.close()
        await standin.stop()


async def ask(c: Cluster, replica: str, user: str, channel: str, question: str) -> str:
    ts = c.standin.post_as_user(channel, user, f"<@{c.standin.workspace.bot_user_id}> {question}")
    delivered = await c.slack(replica).event(c.slack(replica).mention(user, channel, question, ts), new_event_id())
    assert delivered.status == 200
    return ts


async def answer_of(c: Cluster, channel: str, ts: str, timeout_s: float = 60) -> dict[str, Any]:
    async def answered() -> bool:
        return bool(c.answers_to(channel, ts))

    await until(answered, timeout_s, f"no answer to {ts}: {[(x.method, x.params) for x in c.standin.calls[-6:]]}")
    return c.answers_to(channel, ts)[-1]


async def bring_up(c: Cluster, standby: bool) -> str:
    """The worker builds the index from the first commit; then the standby and replicas A and B."""
    c1 = commit_files(c.source, DOCS)
    c.start("worker", "sync", "--watch")
    await until(lambda: indexed(c, c1), 120, "the worker did not build the index")
    if standby:
        c.start("standby", "sync", "--watch")
    c.start("A", "serve")
    c.start("B", "serve")
    await asyncio.gather(c.healthy("A"), c.healthy("B"))
    assert await c.writer_pid() == c.procs["worker"].pid
    return c1


async def indexed(c: Cluster, commit: str) -> bool:
    assert c.procs["worker"].poll() is None, c.log("worker")
    return indexed_commit(c.s3.uri("team/index")) == commit


@pytest.mark.timeout(600)
async def test_one_answer_one_candidate_and_one_rate_limit_across_replicas(
    tmp_path: Path, s3: LocalS3, postgres_url: str
) -> None:
    async with cluster(tmp_path, s3, postgres_url, per_minute=PER_MINUTE) as c:
        await bring_up(c, standby=False)
        a, b = c.slack("A"), c.slack("B")

        # The DM mention arrives as app_mention at A and as message.im at B.
        dm = c.standin.dm_channel(demo.BOB)
        text = f"<@{c.standin.workspace.bot_user_id}> {VPN_Q}"
        ts = c.standin.post_as_user(dm, demo.BOB, text)
        await asyncio.gather(a.event(a.mention(demo.BOB, dm, VPN_Q, ts), new_event_id()),
                             b.event(b.direct_message(demo.BOB, dm, text, ts), new_event_id()))
        assert "VPN Setup" in visible_text(await answer_of(c, dm, ts))

        # The same event to A, and Slack's retry of it to B.
        ts2 = c.standin.post_as_user(demo.GENERAL, demo.BOB, text)
        event = a.mention(demo.BOB, demo.GENERAL, VPN_Q, ts2)
        await a.event(event, "EvSAME1")
        await b.event(event, "EvSAME1", retry=1)
        await answer_of(c, demo.GENERAL, ts2)

        # A retry to B whose first delivery reached no replica.
        ts3 = c.standin.post_as_user(demo.GENERAL, demo.BOB, text)
        await b.event(b.mention(demo.BOB, demo.GENERAL, VPN_Q, ts3), "EvLOST1", retry=1)
        await answer_of(c, demo.GENERAL, ts3)
        await asyncio.sleep(3)  # time for any duplicate to show up
        assert [len(c.answers_to(ch, t)) for ch, t in ((dm, ts), (demo.GENERAL, ts2), (demo.GENERAL, ts3))] == [1, 1, 1]

        # A 👎 button on B for the answer A posted, and a 👎 reaction on A, at the same moment.
        [message] = [m for m in c.bot_replies(demo.GENERAL) if m.get("thread_ts") == ts2]
        down = next(x for x in buttons(message) if x["action_id"] == FEEDBACK_DOWN)
        reaction = {"type": "reaction_added", "user": demo.DAN, "reaction": "-1",
                    "item_user": c.standin.workspace.bot_user_id,
                    "item": {"type": "message", "channel": demo.GENERAL, "ts": message["ts"]},
                    "event_ts": c.standin.next_ts()}
        clicked, reacted = await asyncio.gather(b.click(demo.BOB, demo.GENERAL, down, message),
                                                a.event(reaction, new_event_id()))
        assert (clicked.status, reacted.status) == (200, 200)
        await assert_one_candidate_with_votes(c, down["value"], {demo.BOB, demo.DAN})

        # A user at the rate limit on A is limited on B.
        await asyncio.gather(*(ask(c, "A", demo.EVE, demo.GENERAL, f"{VPN_Q} ({i})") for i in range(PER_MINUTE)))

        async def counted_on_a() -> bool:  # A took them (well inside the 60 s window, however slow answers are)
            async with c.db.begin() as session:
                window = await session.get(RateWindow, demo.EVE)
            return window is not None and len(window.stamps) == PER_MINUTE

        await until(counted_on_a, 30, "A did not count the questions")
        limited_at = len(c.standin.calls_to("chat.postEphemeral", ok_only=True))
        over = await ask(c, "B", demo.EVE, demo.GENERAL, f"{VPN_Q} (over)")

        async def told_to_wait() -> bool:
            return any(f"asked {PER_MINUTE} questions" in json.dumps(p)
                       for p in c.standin.calls_to("chat.postEphemeral", ok_only=True)[limited_at:])

        await until(told_to_wait, 30, "B did not apply A's rate limit")
        assert c.answers_to(demo.GENERAL, over) == []


@pytest.mark.timeout(600)
async def test_a_push_mid_sync_reaches_the_other_replica_and_a_standby_replaces_a_killed_worker(
    tmp_path: Path, s3: LocalS3, postgres_url: str
) -> None:
    async with cluster(tmp_path, s3, postgres_url) as c:
        await bring_up(c, standby=True)

        async def mid_sync() -> bool:
            """Embedding, so past its fetch: a commit made now is not in this sync."""
            return (await recorded_status(c.db))["syncing"] is not None

        async def parking_cited(commit: str) -> bool:
            ts = await ask(c, "B", demo.ALICE, demo.GENERAL, PARKING_Q)
            reply = visible_text(await answer_of(c, demo.GENERAL, ts))
            return "level -2" in reply and commit[:7] in reply

        # A push to A while the worker is mid-sync: applied by the next run, then cited by B.
        commit_files(c.source, filler("one", 300))
        await c.push("A")
        await until(mid_sync, 60, "the worker did not start the sync")
        c3 = commit_files(c.source,
                          {"facilities/parking.md": "# Parking\n\nVisitors park on level -2 of the garage.\n"})
        pushed = time.monotonic()
        await c.push("A")
        await until(lambda: parking_cited(c3), 120, "B never cited the pushed doc")
        assert time.monotonic() - pushed < 120
        await until(lambda: all_recorded(c), 30, "the run that applied the push never recorded it")
        first, second = [r for r in await c.requests() if r.source == "webhook"][-2:]
        assert second.requested_at < first.finished_at  # pushed while the first run was syncing...
        assert second.ok and second.claimed_at >= first.finished_at  # ...and applied by the next one
        assert indexed_commit(c.s3.uri("team/index")) == c3

        # kill -9 of the worker mid-sync: the standby takes the lease and converges; both replicas
        # answer from the old version until the new one is complete.
        c4 = commit_files(c.source, {
            **filler("two", 300), "facilities/parking.md": "# Parking\n\nVisitors park on level -3 of the garage.\n"})
        await c.push("B")
        await until(mid_sync, 60, "the worker did not start the second sync")
        os.kill(c.procs["worker"].pid, signal.SIGKILL)
        killed = time.monotonic()
        answers: list[str] = []
        while indexed_commit(c.s3.uri("team/index")) != c4:
            assert time.monotonic() - killed < 180, "the standby never finished the sync"
            for replica in ("A", "B"):
                ts = await ask(c, replica, demo.ALICE, demo.GENERAL, PARKING_Q)
                answers.append(visible_text(await answer_of(c, demo.GENERAL, ts)))
            await asyncio.sleep(1)
        assert await c.writer_pid() == c.procs["standby"].pid
        assert answers and all(("level -2" in a and c3[:7] in a) or ("level -3" in a and c4[:7] in a)
                               for a in answers), answers
        await until(lambda: parking_cited_again(c, c4), 30, "B never cited the version the standby synced")
        await until(lambda: all_recorded(c), 30, "the killed run's request was never recorded as done")


async def all_recorded(c: Cluster) -> bool:
    """Every request marked done: a run does that just after the commit a replica may already cite."""
    return all(r.finished_at is not None for r in await c.requests())


async def parking_cited_again(c: Cluster, commit: str) -> bool:
    ts = await ask(c, "B", demo.ALICE, demo.GENERAL, PARKING_Q)
    reply = visible_text(await answer_of(c, demo.GENERAL, ts))
    return "level -3" in reply and commit[:7] in reply


async def assert_one_candidate_with_votes(c: Cluster, answer_id: str, voters: set[str]) -> None:
    log = AnswerLog(c.db)

    async def both_recorded() -> bool:
        return {f.user for f in await log.feedback(answer_id) if f.vote == "down"} == voters

    await until(both_recorded, 30, "a vote was lost")
    candidates = [(answer, votes) for answer, votes in await log.pending_downvoted() if answer.answer_id == answer_id]
    assert len(candidates) == 1 and {v.user for v in candidates[0][1]} == voters


@pytest.mark.timeout(600)
async def test_a_replica_answers_from_its_mirror_while_the_bucket_is_down_and_cites_the_next_sync_after(
    tmp_path: Path, s3: LocalS3, postgres_url: str
) -> None:
    async with cluster(tmp_path, s3, postgres_url) as c:
        c1 = commit_files(c.source, DOCS)
        c.start("worker", "sync", "--watch")
        await until(lambda: indexed(c, c1), 120, "the worker did not build the index")
        c.start("A", "serve")
        await c.healthy("A")

        async def vpn_reply() -> str:
            ts = await ask(c, "A", demo.ALICE, demo.GENERAL, VPN_Q)
            return visible_text(await answer_of(c, demo.GENERAL, ts))

        assert c1[:7] in await vpn_reply()
        async def outage_logged() -> bool:
            return BUCKET_DOWN in c.log("A")

        with s3.outage():
            await until(outage_logged, 60, "the outage was not noticed")
            for _ in range(3):  # over several refresh intervals (2 s): answers, and no more warnings
                reply = await vpn_reply()
                assert "VPN Setup" in reply and c1[:7] in reply, reply
                await asyncio.sleep(2)
        assert c.log("A").count(BUCKET_DOWN) == 1

        c2 = commit_files(c.source, {"it/vpn.md": "# VPN Setup\n\nSet up the VPN with the new client from "
                                                  "vpn2.example.com on your laptop.\n"})
        await c.push("A")
        await until(lambda: indexed(c, c2), 120, "the worker did not sync the next commit")
        synced = time.monotonic()

        async def cites_c2() -> bool:
            reply = await vpn_reply()
            return "vpn2.example.com" in reply and c2[:7] in reply

        await until(cites_c2, 30, "the replica never cited the new commit")
        assert time.monotonic() - synced < 2 + 10  # the refresh interval, a copy and one question
        assert "index bucket reachable again" in c.log("A")
