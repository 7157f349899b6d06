"""Audiences that follow the channel, an access file that follows its edits, and output that
cannot surprise: through the real app, signed events and the Slack stand-in."""
from __future__ import annotations

import asyncio
import dataclasses
import threading
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from bot.local import demo
from bot.access import AccessFile, load_access
from bot.app import web_client
from bot.directory import Directory
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import Call, SlackStandIn, visible_text
from bot.telemetry import close_client
from foundation.settings import Settings
from foundation.wiring import lease_config, rag_config
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.levels import Level
from rag.store.search import Store
from state.audience import AudienceChanges
from state.opening import open_state
from sync.folder import index_folder
from rag.embeddings import LocalMiniLM
from eval.standins.openai_server import OpenAIStandIn
from tests.support.mcp import doc_levels
from tests.support.settings import make_settings
from tests.support.slack import answers, chat_methods, mention, model_settings, with_model
from tests.support.waiting import until

ROTATION = "how does the on-call rotation and handover work?"


async def answered_level(local: LocalSlack, channel: str) -> str:
    latest = answers(local, channel)[-1]
    logged = await local.bot.services.answer_log.find_by_message(channel, latest["ts"])
    assert logged is not None
    return logged.level


async def eve_dm_level(local: LocalSlack) -> str:
    """Eve asks about the on-call rotation in her DM; the level her answer was given at."""
    dm = local.standin.dm_channel(demo.EVE)
    ts = local.standin.post_as_user(dm, demo.EVE, ROTATION)
    await local.slack.event(local.slack.direct_message(demo.EVE, dm, ROTATION, ts))
    await local.settle()
    return await answered_level(local, dm)


async def rotation_level(local: LocalSlack, channel: str = demo.ENG) -> str:
    """Dan asks about the on-call rotation (a `team` page); the level his answer was given at."""
    await mention(local, demo.DAN, channel, ROTATION)
    await local.settle()
    return await answered_level(local, channel)


def joined(standin: SlackStandIn, user: str, channel: str) -> dict[str, Any]:
    """Slack's member_joined_channel for a private channel."""
    return {"type": "member_joined_channel", "user": user, "channel": channel, "channel_type": "G",
            "team": standin.workspace.team_id, "event_ts": standin.next_ts()}


def no_team_doc(local: LocalSlack, channel: str = demo.ENG) -> bool:
    return "On-Call Handbook" not in visible_text(answers(local, channel)[-1])


async def test_a_guest_joining_a_private_channel_lowers_the_next_answer_at_once(
    sample_engine: Engine, settings: Settings
) -> None:
    async with local_slack(settings, sample_engine) as local:
        assert await rotation_level(local) == "team"
        local.standin.workspace.channels[demo.ENG]["members"].append(demo.GUEST)
        assert await rotation_level(local) == "team"  # Slack has not told the bot yet: cached
        assert (await local.slack.event(joined(local.standin, demo.GUEST, demo.ENG))).status == 200
        assert await rotation_level(local) == "public" and no_team_doc(local)


STREAMED = "The rotation and the handover follow the handbook's weekly schedule [1]. " * 6


async def test_a_guest_joining_while_the_answer_is_written_gets_it_answered_again_at_public(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    """Issue 51 item 3: dan's answer in #eng is searched at `team`; while the model (the OpenAI
    stand-in, over HTTP) holds the generation, a guest joins #eng and the bot hears of it. Nothing
    is streamed at `team`, and what is posted uses nothing above it (the public docs do not cover
    the question: an abstention)."""
    asked, go = threading.Event(), threading.Event()

    def held(messages: list[dict[str, str]]) -> str:
        if not asked.is_set():  # the first generation waits for the join; the next one does not
            asked.set()
            go.wait(30)
        return STREAMED

    openai_standin.reply = held
    settings = model_settings(settings, openai_standin)
    try:
        async with local_slack(settings, with_model(sample_engine, settings)) as local:
            await mention(local, demo.DAN, demo.ENG, ROTATION)
            await until(asked.is_set, 30, "the model was never asked")
            await guest_joins(local)
            go.set()
            await local.settle()
            await assert_answered_at_public(local, await doc_levels(sample_engine))
            assert "chat.startStream" not in chat_methods(local)
    finally:
        go.set()


async def test_a_guest_joining_while_the_answer_streams_gets_the_stream_deleted_and_answered_again(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    """The guest joins once the `team` answer has started streaming into #eng (Slack holds
    chat.startStream until the bot has heard of the join): the streamed message is deleted before
    the answer is posted, at `public`."""
    openai_standin.reply = lambda messages: STREAMED
    openai_standin.stream_gap_s = 0.05
    settings = model_settings(settings, openai_standin)
    async with local_slack(settings, with_model(sample_engine, settings)) as local:
        async def join_as_it_streams(call: Call) -> None:
            if call.method == "chat.startStream":
                local.standin.on_call = None
                await guest_joins(local)

        local.standin.on_call = join_as_it_streams
        await mention(local, demo.DAN, demo.ENG, ROTATION)
        await local.settle()
        await assert_answered_at_public(local, await doc_levels(sample_engine))
        methods = chat_methods(local)  # one answer left in #eng (above): the stream's message is gone
        assert methods.count("chat.startStream") == 1 and "chat.delete" in methods[methods.index("chat.startStream"):]


async def guest_joins(local: LocalSlack, channel: str = demo.ENG) -> None:
    """A guest joins the private `channel`: Slack's member list and its event, once the bot has logged it."""
    changes = AudienceChanges(local.bot.services.answer_log.db)
    seen = await changes.newest()
    local.standin.workspace.channels[channel]["members"].append(demo.GUEST)
    assert (await local.slack.event(joined(local.standin, demo.GUEST, channel))).status == 200

    async def logged() -> bool:
        return await changes.newest() > seen

    await until(logged, 10, "the join was not processed")


async def assert_answered_at_public(local: LocalSlack, levels: dict[str, Level], channel: str = demo.ENG) -> None:
    """The one answer in `channel` was given at `public` and used no document above it."""
    [answer] = answers(local, channel)
    logged = await local.bot.services.answer_log.find_by_message(channel, answer["ts"])
    assert logged is not None and logged.audience_level == logged.level == "public"
    used = {row["doc_path"] for row in logged.retrieved + logged.citations}
    assert {levels[path] for path in used} <= {Level.public} and no_team_doc(local, channel)


async def test_a_join_slack_never_delivered_stops_team_answers_after_audience_fresh_s(
    sample_engine: Engine, settings: Settings
) -> None:
    settings = settings.model_copy(update={"audience_fresh_s": 1.0})
    async with local_slack(settings, sample_engine) as local:
        assert await rotation_level(local) == "team"
        local.standin.workspace.channels[demo.ENG]["members"].append(demo.GUEST)  # and no event, ever
        await asyncio.sleep(1.2)
        assert await rotation_level(local) == "public" and no_team_doc(local)


async def test_a_join_told_to_one_bot_reaches_another_bot_on_the_same_sqlite_state(
    sample_engine: Engine, settings: Settings
) -> None:
    """Two bots in one process, each with its own connection to the one SQLite file (the default
    state database): the join event reaches A only, B answers next."""
    settings = settings.model_copy(update={"audience_fresh_s": 600.0})
    async with local_slack(settings, sample_engine) as a, local_slack(settings, sample_engine) as b:
        assert await rotation_level(b) == "team"
        for local in (a, b):  # Slack's view: the guest is a member, whichever bot asks
            local.standin.workspace.channels[demo.ENG]["members"].append(demo.GUEST)
        assert (await a.slack.event(joined(a.standin, demo.GUEST, demo.ENG))).status == 200
        await a.settle()
        assert await rotation_level(b) == "public" and no_team_doc(b)


async def test_an_edited_access_file_applies_without_a_restart_and_a_broken_one_is_refused(
    sample_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    access = tmp_path / "access.toml"
    access.write_text('admins = ["U_ALICE"]\n[users]\nU_ALICE = "restricted"\n')
    settings = settings.model_copy(update={"access_file": str(access)})
    async with local_slack(settings, sample_engine) as local:
        assert await eve_dm_level(local) == "public"
        await asyncio.sleep(1.1)  # the file is checked at most once a second
        access.write_text('admins = ["U_ALICE"]\n[users]\nU_ALICE = "restricted"\nU_EVE = "team"\n')
        assert await eve_dm_level(local) == "team"
        await asyncio.sleep(1.1)
        access.write_text('admins = ["U_ALICE"]\n[users]\nU_EVE = "boss"\n')
        assert await eve_dm_level(local) == "team"  # the previous policy stays in force
        await local.settle()
        told = local.standin.messages[local.standin.dm_channel(demo.ALICE)]
        assert len(told) == 1 and "cannot be used" in told[0]["text"] and "'boss'" in told[0]["text"]


async def test_urls_channels_and_here_from_a_doc_are_posted_as_plain_text(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "status.md").write_text(
        "---\ntitle: Status page\naccess: public\n---\n# Status page\n\n"
        "The status page lives at https://evil.example/status and every incident is announced "
        "in #general with @here so everyone sees the status page.\n")
    settings = make_settings(tmp_path / "index")
    engine = Engine(rag_config(settings), Store(str(tmp_path / "index")), embedder, ExtractiveAnswerer())
    await asyncio.to_thread(index_folder, engine, lease_config(settings), docs)
    async with local_slack(settings, engine) as local:
        await mention(local, demo.BOB, demo.GENERAL, "where is the status page?")
        await local.settle()
        [answer] = answers(local, demo.GENERAL)
        body = answer["blocks"][0]["text"]
        assert body["verbatim"] is True
        assert "https://evil.example/status" in body["text"] and "#general" in body["text"] and "@here" in body["text"]
        sources = [b["text"] for b in answer["blocks"] if b["type"] == "section" and "Sources" in b["text"]["text"]]
        assert sources and all(s["verbatim"] is True for s in sources)
        posted = str(answer["blocks"]) + answer["text"]
        assert "<https://evil" not in posted and "<!here" not in posted and "<#" not in posted


async def test_the_rate_limit_is_checked_before_any_member_lookup(sample_engine: Engine, settings: Settings) -> None:
    settings = settings.model_copy(update={"bot_user_questions_per_minute": 1})
    async with local_slack(settings, dataclasses.replace(sample_engine, config=rag_config(settings))) as local:
        await mention(local, demo.DAN, demo.GENERAL, ROTATION)
        await local.settle()
        await mention(local, demo.DAN, demo.ENG, ROTATION)  # over the limit, in a channel not looked up yet
        await local.settle()
        [note] = [c for c in local.standin.calls_to("chat.postEphemeral") if c["channel"] == demo.ENG]
        assert "You've asked 1 questions" in note["text"]
        assert not [c for c in local.standin.calls if c.params.get("channel") == demo.ENG
                    and c.method.startswith("conversations.")]


async def test_a_private_channels_members_are_looked_up_concurrently_and_bounded() -> None:
    workspace = demo.demo_workspace()
    members = [f"U_M{i:02d}" for i in range(16)]
    for user in members:
        workspace.add_user(user, user.lower(), f"{user.lower()}@example.com")
    workspace.add_channel("C_BIG", "big", [*members, workspace.bot_user_id], is_private=True)
    standin = await SlackStandIn(workspace, demo.TOKEN).start()
    try:
        standin.delays["users.info"] = 0.2
        settings = Settings(_env_file=None, SLACK_BOT_TOKEN=SecretStr(demo.TOKEN), SLACK_API_URL=standin.base_url)
        directory = Directory(web_client(settings), AccessFile.fixed(load_access(demo.ACCESS_FILE)), 60)
        started = asyncio.get_running_loop().time()
        audience = await directory.audience("C_BIG")
        elapsed = asyncio.get_running_loop().time() - started
        assert audience.level is Level.team  # everyone is team by their email domain
        assert len(standin.calls_to("users.info")) == 17  # and the bot itself
        assert elapsed < 17 * 0.2 / 3  # one at a time would take 3.4 s; eight at a time ~0.6 s
        starts = sorted(c.at for c in standin.calls if c.method == "users.info")
        assert starts[8] - starts[0] >= 0.19  # no more than eight at once
    finally:
        await standin.stop()


async def test_an_unreadable_change_log_trusts_no_cached_audience(tmp_path: Path) -> None:
    """The log read before an answer fails (here: the state file is gone): the cached audience of
    a private channel is confirmed with Slack again, however fresh."""
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    state_file = tmp_path / "state.db"
    db = await open_state(f"sqlite:///{state_file}")
    settings = Settings(_env_file=None, SLACK_BOT_TOKEN=SecretStr(demo.TOKEN), SLACK_API_URL=standin.base_url)
    client = web_client(settings)
    directory = Directory(client, AccessFile.fixed(load_access(demo.ACCESS_FILE)), 300, 300, AudienceChanges(db))
    try:
        for _ in range(2):
            await directory.follow_changes()
            assert (await directory.audience(demo.ENG)).level is Level.team
        assert len(standin.calls_to("conversations.info")) == 1  # the second answer used the cache
        await db.close()
        for path in tmp_path.glob("state.db*"):
            path.unlink()
        await directory.follow_changes()
        assert (await directory.audience(demo.ENG)).level is Level.team
        assert len(standin.calls_to("conversations.info")) == 2
    finally:
        await close_client(client)
        await db.close()
        await standin.stop()
