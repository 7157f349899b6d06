"""Two real `docsbot serve` replicas on one Postgres and one Slack stand-in: an audience change
Slack delivers to one replica holds on the other from its next answer, and a change Slack never
delivers holds on both once DOCSBOT_AUDIENCE_FRESH_S has passed (issue 35 item 1)."""
from __future__ import annotations

import asyncio
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import EVENTS_PATH
from bot.blocks import is_placeholder
from bot.deliveries import SlackDeliveries
from bot.local import demo
from bot.local.standin import SlackStandIn, visible_text
from eval.bench_acks import free_port, start_bot
from state.answers import AnswerLog
from state.audience import AudienceChanges
from state.db import StateDB
from state.opening import open_state
from tests.support.waiting import until
from tests.test_bot_audience import ROTATION, joined
from tests.test_scaleout import new_event_id

TEAM_DOC = "On-Call Handbook"  # access: team in docs-sync


@dataclass
class Replicas:
    standin: SlackStandIn
    db: StateDB
    http: aiohttp.ClientSession
    urls: dict[str, str] = field(default_factory=dict)

    def slack(self, name: str) -> SlackDeliveries:
        ws = self.standin.workspace
        return SlackDeliveries(self.http, self.urls[name] + EVENTS_PATH, demo.SIGNING_SECRET, ws.team_id,
                               ws.bot_user_id, self.standin.response_url)

    async def ask(self, name: str, user: str, channel: str) -> tuple[str, str]:
        """(the level the answer was logged at, its text) of a mention delivered to replica `name`."""
        ts = self.standin.post_as_user(channel, user, f"<@{self.standin.workspace.bot_user_id}> {ROTATION}")
        slack = self.slack(name)
        assert (await slack.event(slack.mention(user, channel, ROTATION, ts), new_event_id())).status == 200
        answer: dict[str, Any] = {}

        async def logged() -> bool:
            replies = [m for m in self.standin.messages.get(channel, [])
                       if m.get("bot_id") and m.get("thread_ts") == ts and not is_placeholder(m["text"])]
            found = replies and await AnswerLog(self.db).find_by_message(channel, replies[-1]["ts"])
            answer.update(found and {"level": found.level, "text": visible_text(replies[-1])} or {})
            return bool(found)

        await until(logged, 60, f"replica {name} never answered in {channel}")
        return answer["level"], answer["text"]

    async def tell(self, name: str, event: dict[str, Any]) -> None:
        """Deliver `event` to replica `name` and wait until it has logged the change."""
        before = await AudienceChanges(self.db).newest()
        assert (await self.slack(name).event(event, new_event_id())).status == 200
        await until(lambda: self.logged_after(before), 30, f"replica {name} never logged {event['type']}")

    async def logged_after(self, seq: int) -> bool:
        return await AudienceChanges(self.db).newest() > seq


@asynccontextmanager
async def replicas(tmp_path: Path, index: Path, db_url: str, fresh_s: float) -> AsyncIterator[Replicas]:
    """Replicas A and B, each with its own copy of the sample index, sharing `db_url`."""
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    db = await open_state(db_url)  # migrated once, before either starts
    r = Replicas(standin, db, aiohttp.ClientSession())
    processes = []
    try:
        for name in ("A", "B"):
            shutil.copytree(index, tmp_path / name)
            port = free_port()
            r.urls[name] = f"http://127.0.0.1:{port}"
            env = {"SLACK_BOT_TOKEN": demo.TOKEN, "SLACK_SIGNING_SECRET": demo.SIGNING_SECRET,
                   "SLACK_API_URL": standin.base_url, "PORT": str(port), "DOCSBOT_DATA_DIR": str(tmp_path / name),
                   "DOCSBOT_DATABASE_URL": db_url, "DOCSBOT_ACCESS_FILE": str(demo.ACCESS_FILE),
                   "DOCSBOT_AUDIENCE_FRESH_S": str(fresh_s), "DOCSBOT_BOT_USER_QUESTIONS_PER_MINUTE": "100"}
            processes.append(await start_bot(env, r.urls[name]))
        yield r
    finally:
        for process in processes:
            process.terminate()
        await asyncio.gather(*(asyncio.wait_for(p.wait(), 30) for p in processes))
        await r.http.close()
        await db.close()
        await standin.stop()


@pytest.mark.timeout(300)
async def test_a_join_and_a_demotion_told_to_one_replica_hold_on_the_other_at_its_next_answer(
    tmp_path: Path, sample_index: Path, postgres_url: str
) -> None:
    async with replicas(tmp_path, sample_index, postgres_url, fresh_s=600) as r:  # freshness cannot help here
        assert (await r.ask("B", demo.DAN, demo.ENG))[0] == "team"
        r.standin.workspace.channels[demo.ENG]["members"].append(demo.GUEST)
        await r.tell("A", joined(r.standin, demo.GUEST, demo.ENG))
        after = [await r.ask("B", demo.DAN, demo.ENG) for _ in range(3)]
        assert [level for level, _ in after] == ["public"] * 3
        assert not [text for _, text in after if TEAM_DOC in text]

        assert (await r.ask("A", demo.ALICE, demo.SRE))[0] == "restricted"  # alice and dan
        r.standin.workspace.users[demo.DAN]["is_restricted"] = True  # dan becomes a guest
        await r.tell("B", {"type": "user_change", "user": r.standin.workspace.users[demo.DAN],
                           "event_ts": r.standin.next_ts()})
        assert (await r.ask("A", demo.ALICE, demo.SRE))[0] == "public"


@pytest.mark.timeout(300)
async def test_a_join_slack_never_delivered_holds_on_both_replicas_after_audience_fresh_s(
    tmp_path: Path, sample_index: Path, postgres_url: str
) -> None:
    fresh_s = 2.0
    async with replicas(tmp_path, sample_index, postgres_url, fresh_s) as r:
        assert [(await r.ask(name, demo.DAN, demo.ENG))[0] for name in ("A", "B")] == ["team", "team"]
        r.standin.workspace.channels[demo.ENG]["members"].append(demo.GUEST)  # and no event, to anyone
        await asyncio.sleep(fresh_s + 0.5)
        after = [await r.ask(name, demo.DAN, demo.ENG) for name in ("A", "B", "A", "B")]
        assert [level for level, _ in after] == ["public"] * 4
        assert not [text for _, text in after if TEAM_DOC in text]
