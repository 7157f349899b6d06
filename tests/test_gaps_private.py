"""People's questions are as private as the docs (issue 35 item 2): what was asked in a DM, the
assistant panel or a private channel reaches the page owner, an admin and `docsbot report` as a
count in its group, never word for word; the asker alone reads their own; a public-channel
question is quoted, and in the digest only once several people asked it. Asked and read through
the real app (signed requests, the Slack stand-in) on one Postgres database."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from pydantic import SecretStr

from bot.deliveries import buttons
from bot.digest import send_digests
from bot.local import demo
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import visible_text
from foundation.settings import Settings
from rag import Engine, Level
from tests.support.cli import docsbot
from tests.support.slack import VPN, answers, open_home
from tests.test_assistant import ask_in_panel, open_panel
from tests.test_gaps import ROOMS, ask, command, digests, policy, thumbs_down

CLUB = "C_CLUB"  # a private channel of two public-level people: what is asked there is read at `public`
# One need, asked four times privately by two people: each names someone who must not know.
THERAPY = {"Carol": (demo.EVE, "dm", "can I expense my therapy sessions? my manager Carol must not know"),
           "Trent": (demo.GUEST, "panel",
                     "are therapist visits covered by expenses? Trent must not know I am seeing one"),
           "Oscar": (demo.EVE, CLUB, "can I claim my psychotherapy bills? Oscar must not find out"),
           "Mallory": (demo.GUEST, CLUB, "is therapy an expense I can claim? Mallory must not know")}
PEGGY = "can I get a parking spot near the hospital entrance for my chemo? Peggy must not know"  # alice, her DM
FRIDAY = "can I deploy to production on a Friday?"  # bob, his DM, then a 👎
ZED = "Friday deploys are allowed until noon since May, ask Zed"  # bob's expected answer
EXPENSES = "Expenses and Business Travel"  # the page the therapy questions come closest to (bob's)
SECRETS = [*THERAPY, "Peggy", "Zed", FRIDAY]


def test_the_rule_only_a_public_channel_is_public_and_the_asker_reads_their_own() -> None:
    from state.gaps import SEVERAL, Reader, Unanswered, quoted  # here: the other tests run on code without it

    asked = [Unanswered("a1", 0, "q1", "U1", Level.public, "no_match", ""),  # a DM, the panel, MCP...: not public
             Unanswered("a2", 0, "q2", "U2", Level.public, "no_match", "", public=True),
             Unanswered("a3", 0, "q3", "U3", Level.public, "no_match", "", public=True)]
    assert [a.answer_id for a in quoted(Reader(), asked)] == ["a2", "a3"]  # `docsbot report`: nobody in particular
    assert [a.answer_id for a in quoted(Reader("U1"), asked)] == ["a1", "a2", "a3"]  # the asker
    assert quoted(Reader("U9", SEVERAL), asked) == []  # the digest: two people asked in public, not three
    assert [a.answer_id for a in quoted(Reader("U9", SEVERAL), asked, {"U4"})] == ["a2", "a3"]  # a third, elsewhere
    assert [a.answer_id for a in quoted(Reader("U1", SEVERAL), asked)] == ["a1"]


async def ask_anywhere(local: LocalSlack, user: str, where: str, text: str) -> None:
    if where == "panel":
        await ask_in_panel(local, user, *(await open_panel(local, user)), text)
    else:
        await ask(local, user, where, text)


def leaked(text: str, reader: str = "") -> list[str]:
    """The private words of others found in `text` (alice's own may reach alice)."""
    return [s for s in SECRETS if s in text and not (reader == demo.ALICE and s == "Peggy")]


@pytest.mark.timeout(600)  # 13 questions through the app, then four `docsbot report` processes
async def test_private_questions_are_counts_for_everyone_but_their_asker(
    sample_engine: Engine, settings: Settings, postgres_url: str,
) -> None:
    settings = settings.model_copy(update={"database_url": SecretStr(postgres_url),
                                           "bot_user_questions_per_minute": 100})
    shown: dict[str, str] = {}
    async with local_slack(settings, sample_engine, policy=policy()) as local:
        local.standin.workspace.add_channel(CLUB, "club", [demo.EVE, demo.GUEST, local.standin.workspace.bot_user_id],
                                            is_private=True)
        for user, where, text in THERAPY.values():
            await ask_anywhere(local, user, where, text)
        await ask(local, demo.ALICE, "dm", PEGGY)
        for user, text in zip((demo.EVE, demo.DAN, demo.GUEST), ROOMS):  # three people, in #general
            await ask(local, user, demo.GENERAL, text)
        vacation = await ask(local, demo.EVE, demo.GENERAL, "how many vacation days do I get?")  # one person
        await thumbs_down(local, demo.EVE, vacation, "wrong", "we get 30 days since January")
        friday = await ask(local, demo.BOB, "dm", FRIDAY)
        await thumbs_down(local, demo.BOB, friday, "outdated", ZED)
        assert not [m for m in answers(local, CLUB) if "above your access level" in visible_text(m)]

        shown["gaps alice"] = await command(local, demo.ALICE, "gaps")  # an admin: all of it
        shown["gaps bob"] = await command(local, demo.BOB, "gaps")  # an owner: expenses, the FAQ, time off
        now = datetime.now(timezone.utc) + timedelta(minutes=1)
        assert {demo.ALICE, demo.BOB} <= set(await send_digests(local.bot.services, local.bot.client, now))
        for user, [text] in digests(local).items():
            shown[f"digest {user}"] = text
        for user in (demo.ALICE, demo.BOB):
            shown[f"home {user}"] = visible_text(await open_home(local, user))

    env = {"DOCSBOT_DATA_DIR": settings.data_dir, "DOCSBOT_DATABASE_URL": postgres_url,
           "DOCSBOT_DIGEST_NAME_ASKERS": "true"}
    for level, form in (("public", "--json"), ("team", "--json"), ("restricted", "--json"), ("restricted", "--text")):
        run = docsbot("report", "--level", level, *([form] if form == "--json" else []), env=env)
        assert run.returncode == 0, run.stderr
        shown[f"report {level} {form}"] = run.stdout

    # Nobody reads anyone else's private words, on any surface, at any level.
    leaks = {where: found for where, text in shown.items()
             if (found := leaked(text, demo.ALICE if "U_ALICE" in where or "alice" in where else ""))}
    assert leaks == {}

    # ... but the counts are there, under the docs' words: the therapy need is the most asked.
    assert f"4× about {EXPENSES}" in shown["gaps bob"] and "; not quoted" in shown["gaps bob"]
    assert f"4× about {EXPENSES}" in shown["gaps alice"] and f"4× about {EXPENSES}" in shown[f"digest {demo.BOB}"]
    assert f"most asked: about {EXPENSES}" in shown[f"home {demo.BOB}"]
    assert "7 questions they could not answer" in shown[f"home {demo.BOB}"]  # 4 therapy + 3 rooms
    report = json.loads(shown["report public --json"])
    [therapy] = [g for g in report["gaps"] if g["count"] == 4]
    assert therapy["example"] is None and therapy["label"] == EXPENSES and therapy["unquoted"] == 4
    assert "askers" not in therapy  # nobody is named for what they asked privately
    # bob's 👎 from his DM: a count on alice's page, without his question or his expected answer
    assert "👎 on an answer (not quoted): outdated" in shown["gaps alice"]
    assert "👎 on an answer (not quoted): outdated" in shown[f"digest {demo.ALICE}"]
    # the asker reads her own (alice, an admin, in /docs gaps), nobody else does
    assert PEGGY in shown["gaps alice"] and "Peggy" not in shown["report restricted --text"]
    restricted = json.loads(shown["report restricted --json"])
    assert sum(g["count"] for g in restricted["gaps"]) == 4 + 1 + 3

    # A public-channel question is quoted: on demand always, in the digest once three people asked it.
    assert any(f"“{q}”" in shown["gaps bob"] for q in ROOMS[:3])
    assert any(f"“{q}”" in shown[f"digest {demo.BOB}"] for q in ROOMS[:3])
    assert "how many vacation days do I get?" in shown["gaps bob"] and "30 days since January" in shown["gaps bob"]
    assert "vacation days" not in shown[f"digest {demo.BOB}"] and "since January" not in shown[f"digest {demo.BOB}"]
    assert "👎 on an answer (not quoted): wrong" in shown[f"digest {demo.BOB}"]
    rooms = [g for g in report["gaps"] if g["example"] in ROOMS]
    assert rooms and sorted(rooms[0]["askers"]) == sorted([demo.EVE, demo.DAN, demo.GUEST])


async def test_the_feedback_review_quotes_only_what_was_asked_in_a_public_channel(
    sample_engine: Engine, settings: Settings,
) -> None:
    """`/docs feedback` lists every 👎 waiting for review to an admin: one from a DM by its id,
    without the question or what the person expected."""
    private = f"{VPN} my manager Carol must not know"
    async with local_slack(settings, sample_engine, policy=policy()) as local:
        in_dm = await ask(local, demo.EVE, "dm", private)
        await thumbs_down(local, demo.EVE, in_dm, "missing", "the steps for Carol's laptop")
        in_public = await ask(local, demo.GUEST, demo.GENERAL, VPN)
        await thumbs_down(local, demo.GUEST, in_public, "outdated", "the new client")
        shown = await command(local, demo.ALICE, "feedback")
    ids = [buttons(answer)[1]["value"] for answer in (in_dm, in_public)]
    assert all(answer_id in shown for answer_id in ids) and "Carol" not in shown
    assert "(asked privately: not quoted)" in shown and VPN in shown and "the new client" in shown
