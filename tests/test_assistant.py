"""The assistant side panel through the real app: a thread starts (payload as in Bolt's own
tests) and gets suggested prompts; a message in it gets a status, a title and a cited answer in
the thread, at the asker's own level whatever channel they are looking at."""
from __future__ import annotations

from typing import Any

from bot.local import demo
from bot.blocks import FEEDBACK_NATIVE
from bot.deliveries import buttons, feedback_choices
from bot.feedback import FEEDBACK_FORM
from bot.listeners.assistant import GREETING, SEARCHING
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import visible_text
from bot.suggestions import most_asked, one_per_area
from foundation.settings import Settings
from rag.engine import Engine
from rag.levels import Level
from state.answers import AskedInPublic
from tests.support.slack import BREAK_GLASS, VPN, answers, mention, open_home


def thread_started(local: LocalSlack, user: str, dm: str, thread_ts: str, viewing: str) -> dict[str, Any]:
    return {"type": "assistant_thread_started",
            "assistant_thread": {"user_id": user, "context": {"channel_id": viewing, "team_id": "T_DEMO",
                                                             "enterprise_id": None},
                                 "channel_id": dm, "thread_ts": thread_ts},
            "event_ts": local.standin.next_ts()}


def context_changed(local: LocalSlack, user: str, dm: str, thread_ts: str, viewing: str) -> dict[str, Any]:
    return thread_started(local, user, dm, thread_ts, viewing) | {"type": "assistant_thread_context_changed"}


async def ask_in_panel(local: LocalSlack, user: str, dm: str, thread_ts: str, text: str) -> str:
    ts = local.standin.post_as_user(dm, user, text, thread_ts)
    event = {"type": "message", "user": user, "text": text, "ts": ts, "thread_ts": thread_ts,
             "parent_user_id": local.standin.workspace.bot_user_id, "channel": dm, "channel_type": "im",
             "assistant_thread": {"action_token": "10116779555154.1"}, "event_ts": ts}
    assert (await local.slack.event(event)).status == 200
    await local.settle()
    return ts


async def open_panel(local: LocalSlack, user: str, viewing: str = demo.GENERAL) -> tuple[str, str]:
    dm = local.standin.dm_channel(user)
    root = local.standin.next_ts()
    assert (await local.slack.event(thread_started(local, user, dm, root, viewing))).status == 200
    await local.settle()
    return dm, root


async def test_a_new_thread_is_greeted_with_prompts_from_the_docs_the_asker_may_read(local: LocalSlack) -> None:
    dm, root = await open_panel(local, demo.EVE)
    [greeting] = [m for m in local.standin.messages[dm] if m.get("bot_id")]
    assert greeting["text"] == GREETING and greeting["thread_ts"] == root
    prompts = local.standin.assistant_threads[(dm, root)]["prompts"]
    assert 1 <= len(prompts) <= 4 and all(p["message"].startswith("What do the docs say about") for p in prompts)
    alice_dm, alice_root = await open_panel(local, demo.ALICE)
    assert local.standin.assistant_threads[(alice_dm, alice_root)]["prompts"] != prompts  # more areas to draw from


async def test_a_message_in_the_panel_sets_the_status_then_answers_in_the_thread_at_the_askers_level(
    local: LocalSlack,
) -> None:
    dm, root = await open_panel(local, demo.ALICE)
    await local.slack.event(context_changed(local, demo.ALICE, dm, root, demo.GENERAL))  # looking at #general
    await ask_in_panel(local, demo.ALICE, dm, root, BREAK_GLASS)
    calls = [c.method for c in local.standin.calls]
    status = calls.index("assistant.threads.setStatus")
    [answer] = [m for m in answers(local, dm) if m["text"] != GREETING]
    assert calls.index("chat.postMessage", status) > status  # the status first, then the answer
    assert local.standin.assistant_threads[(dm, root)]["status"] == SEARCHING
    assert local.standin.assistant_threads[(dm, root)]["title"] == BREAK_GLASS
    assert answer["thread_ts"] == root and "Break-Glass" in visible_text(answer) and "[1]" in visible_text(answer)
    assert (await local.bot.services.answer_log.find_by_message(dm, answer["ts"])).level == "restricted"


async def test_panel_answers_carry_slacks_own_feedback_buttons_which_record_votes(local: LocalSlack) -> None:
    dm, root = await open_panel(local, demo.BOB)
    await ask_in_panel(local, demo.BOB, dm, root, VPN)
    [answer] = [m for m in answers(local, dm) if m["text"] != GREETING]
    assert not buttons(answer)
    up, down = feedback_choices(answer)
    assert up["action_id"] == down["action_id"] == FEEDBACK_NATIVE
    answer_id = down["value"].removeprefix("down:")
    assert (await local.slack.click(demo.BOB, dm, down, answer)).status == 200
    await local.settle()
    [vote] = await local.bot.services.answer_log.feedback(answer_id)
    assert (vote.user, vote.vote) == (demo.BOB, "down")
    [form] = local.standin.calls_to("views.open", ok_only=True)
    assert form["view"]["callback_id"] == FEEDBACK_FORM  # our form still asks what was wrong
    await local.slack.click(demo.BOB, dm, up, answer)
    await local.settle()
    [vote] = await local.bot.services.answer_log.feedback(answer_id)
    assert vote.vote == "up"


async def test_the_panel_never_answers_above_the_askers_own_level(local: LocalSlack) -> None:
    dm, root = await open_panel(local, demo.EVE, viewing=demo.SRE)
    await ask_in_panel(local, demo.EVE, dm, root, BREAK_GLASS)
    [answer] = [m for m in answers(local, dm) if m["text"] != GREETING]
    assert "Break-Glass" not in visible_text(answer) and "above your access level" in visible_text(answer)


async def test_a_question_asked_in_public_channels_by_several_people_becomes_a_prompt(
    sample_engine: Engine, settings: Settings
) -> None:
    async with local_slack(settings, sample_engine) as local:
        for user in (demo.BOB, demo.EVE):
            await mention(local, user, demo.GENERAL, VPN)
        await local.settle()
        dm, root = await open_panel(local, demo.DAN)
        assert all(p["message"] != VPN for p in local.standin.assistant_threads[(dm, root)]["prompts"])  # two: not yet
        await mention(local, demo.ALICE, demo.GENERAL, VPN.lower())
        await local.settle()
        dm, root = await open_panel(local, demo.DAN)
        assert local.standin.assistant_threads[(dm, root)]["prompts"][0]["message"] == VPN


async def test_questions_asked_in_dms_the_panel_or_private_channels_are_never_shown_to_anyone(
    sample_engine: Engine, settings: Settings,
) -> None:
    """Asked by everyone, many times, and still never suggested: a DM, the panel and a private
    channel are as private as the docs (issue 19: a DM about sick leave shown to a guest)."""
    private = "How do I set up the VPN? I am on sick leave and my manager Bob must not know"
    async with local_slack(settings, sample_engine) as local:
        for user in (demo.ALICE, demo.BOB, demo.DAN, demo.EVE):
            dm = local.standin.dm_channel(user)
            ts = local.standin.post_as_user(dm, user, private)
            await local.slack.event(local.slack.direct_message(user, dm, private, ts))
            panel, root = await open_panel(local, user)
            await ask_in_panel(local, user, panel, root, private)
        for user in (demo.ALICE, demo.BOB, demo.DAN):
            await mention(local, user, demo.ENG, private)
        await local.settle()
        assert len(await local.bot.services.answer_log.public_questions_since(0)) == 0
        for viewer in (demo.GUEST, demo.ALICE):
            panel, root = await open_panel(local, viewer)
            shown = visible_text(await open_home(local, viewer)) + str(local.standin.assistant_threads[(panel, root)])
            assert "sick leave" not in shown and "What do the docs say about" in shown


def test_suggestions_need_several_askers_count_spellings_together_and_never_leak_higher_questions() -> None:
    vpn = [("How do I set up the VPN?", "public", "U1"), ("how do i set up  the vpn", "public", "U2"),
           ("How do I set up the VPN?", "public", "U2"), ("how do I set up the VPN", "public", "U3")]
    freeze = [("deploy freeze?", "team", user) for user in ("U1", "U2", "U3")]
    secret = [("who holds the break-glass key?", "restricted", user) for user in ("U1", "U2", "U3", "U4")]
    lonely = [("what is my bonus?", "public", "U9")] * 5  # one person, five times
    long = [("how do I " + "x" * 200, "public", user) for user in ("U1", "U2", "U3")]
    recent = [AskedInPublic(*asked) for asked in vpn + freeze + secret + lonely + long]
    assert most_asked(recent, Level.public) == ["How do I set up the VPN?"]
    assert most_asked(recent, Level.team) == ["How do I set up the VPN?", "deploy freeze?"]
    docs = [("runbooks", "Rollback", 1), ("security", "Break-Glass", 2), ("onboarding", "VPN Setup", 0)]
    assert one_per_area(docs, Level.public) == ["What do the docs say about VPN Setup?"]
