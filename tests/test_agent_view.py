"""docsbot's agent view (issue 52 item 1): `app_context_changed` as Slack's reference shows it (the
context's entities, the person in the envelope's authorizations), `app_home_opened` with `tab:
messages`, and DMs, signed, to the real app. The channel a person looks at sets the scope and the
readers of the next answer in their DM, and the DM's suggested prompts."""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from bot.access import load_access
from bot.local import demo
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import visible_text
from foundation.settings import Settings
from rag.engine import Engine
from state.answers import AnswerRow

ROLLBACK = "how do I roll back a bad deploy?"
FRIDAY = "can I deploy on friday?"


async def looks_at(local: LocalSlack, user: str, channel: str | None) -> None:
    """`user` looks at `channel` (None: at nothing) while docsbot's agent view is open."""
    assert (await local.slack.context_changed(user, channel)).status == 200
    await local.settle()


async def dm(local: LocalSlack, user: str, text: str) -> str:
    """`user` asks docsbot in their DM; the visible text of its answer."""
    channel = local.standin.dm_channel(user)
    ts = local.standin.post_as_user(channel, user, text)
    assert (await local.slack.event(local.slack.direct_message(user, channel, text, ts))).status == 200
    await local.settle()
    return visible_text([m for m in local.standin.messages[channel] if m.get("bot_id")][-1])


async def logged(local: LocalSlack, question: str) -> list[AnswerRow]:
    async with local.bot.services.answer_log.db.begin() as session:
        return list(await session.scalars(select(AnswerRow).where(AnswerRow.question == question)))


async def test_the_channel_looked_at_sets_the_readers_of_the_next_answer_in_the_dm(local: LocalSlack) -> None:
    """bob (team) asks about rollbacks (a team page) in his DM: at his level; looking at #general
    (public), for #general's readers, and the answer says so; looking at nothing, his own again."""
    assert "Rollback" in await dm(local, demo.BOB, ROLLBACK)
    await looks_at(local, demo.BOB, demo.GENERAL)
    shown = await dm(local, demo.BOB, ROLLBACK)
    assert "Rollback" not in shown and f"Answered for <#{demo.GENERAL}>" in shown
    await looks_at(local, demo.BOB, None)
    shown = await dm(local, demo.BOB, ROLLBACK)
    assert "Rollback" in shown and "Answered for" not in shown
    levels = [(row.level, row.public_channel) for row in await logged(local, ROLLBACK)]
    assert levels == [("team", False), ("public", False), ("team", False)]  # a DM question is never public


async def test_the_channel_looked_at_sets_the_scope_and_the_dms_prompts(
    sample_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    access = tmp_path / "access.toml"
    access.write_text(demo.ACCESS_FILE.read_text().replace(
        'C_ENG = "team"', '[channels.C_ENG]\nlevel = "team"\nscope = ["runbooks/**"]\nscope_mode = "only"'))
    async with local_slack(settings, sample_engine, policy=load_access(access)) as local:
        assert "Deploy Policy" in await dm(local, demo.BOB, FRIDAY)
        await looks_at(local, demo.BOB, demo.ENG)
        assert "Deploy Policy" not in await dm(local, demo.BOB, FRIDAY)  # #eng's docs are its runbooks
        [call] = local.standin.calls_to("assistant.threads.setSuggestedPrompts", ok_only=True)
        assert call["channel_id"] == local.standin.dm_channel(demo.BOB) and "thread_ts" not in call
        # one question per area of #eng's scope, at the level an answer there uses
        assert [p["message"] for p in call["prompts"]] == ["What do the docs say about Incident Response?"]


async def test_opening_the_dm_sets_prompts_for_what_is_looked_at(local: LocalSlack) -> None:
    channel = local.standin.dm_channel(demo.EVE)
    event = {"type": "app_home_opened", "user": demo.EVE, "channel": channel, "tab": "messages",
             "event_ts": local.standin.next_ts()}
    assert (await local.slack.event(event)).status == 200
    await local.settle()
    prompts = local.standin.assistant_threads[(channel, "")]["prompts"]
    assert prompts and all(p["message"].startswith("What do the docs say about") for p in prompts)
    assert demo.EVE not in local.standin.home_tabs  # the Messages tab publishes no Home tab
