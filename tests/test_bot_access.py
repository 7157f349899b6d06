"""Who may read what: the access file, level lookups against the Slack stand-in, and a matrix of
people × conversations checking that nothing posted ever carries a document above its lowest reader."""
from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.local import demo
from bot.access import AccessFile, AccessFileError, AccessPolicy, load_access, parse_access
from bot.app import web_client
from bot.deliveries import buttons
from bot.directory import Directory
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import Failure, SlackStandIn, visible_text
from foundation.settings import Settings
from foundation.wiring import rag_config
from rag.engine import Engine
from rag.levels import Level
from tests.support.settings import SAMPLE_DOCS


def test_example_access_file_parses() -> None:
    policy = load_access(demo.ACCESS_FILE)
    assert policy.is_admin(demo.ALICE) and not policy.is_admin(demo.BOB)
    assert policy.users[demo.ALICE] is Level.restricted
    assert policy.domain_level("Bob@EXAMPLE.com".lower()) is Level.team
    assert policy.channels[demo.ENG] is Level.team and policy.member_default is Level.public


@pytest.mark.parametrize("text, message", [
    ('[users]\nU1 = "admin"', "[users] U1: unknown access level 'admin'"),
    ('[people]\nU1 = "team"', "unknown section(s) ['people']"),
    ('admins = "U1"', "`admins` must be a list"),
    ('[defaults]\nguest = "team"', "[defaults] accepts only"),
    ("users = [", "not valid TOML"),
])
def test_bad_access_files_say_what_is_wrong(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "access.toml"
    path.write_text(text)
    with pytest.raises(AccessFileError) as error:
        load_access(path)
    assert message in str(error.value) and str(path) in str(error.value)


def test_missing_access_file_is_an_error_and_no_file_means_everyone_public(tmp_path: Path) -> None:
    with pytest.raises(AccessFileError, match="cannot read it"):
        load_access(tmp_path / "nope.toml")
    assert load_access("") == AccessPolicy()


# -- lookups ---------------------------------------------------------------------------------------


@pytest.fixture
async def standin() -> AsyncIterator[SlackStandIn]:
    server = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    yield server
    await server.stop()


def directory(standin: SlackStandIn, policy: AccessPolicy | None = None, ttl_s: float = 60.0) -> Directory:
    settings = Settings(_env_file=None, SLACK_BOT_TOKEN=SecretStr(demo.TOKEN), SLACK_API_URL=standin.base_url)
    return Directory(web_client(settings), AccessFile.fixed(policy or load_access(demo.ACCESS_FILE)), ttl_s)


async def test_user_levels_by_id_group_domain_default_and_guest(standin: SlackStandIn) -> None:
    d = directory(standin)
    levels = {u: await d.user_level(u) for u in (demo.ALICE, demo.BOB, demo.DAN, demo.EVE, demo.GUEST)}
    assert levels == {demo.ALICE: Level.restricted, demo.BOB: Level.team, demo.DAN: Level.restricted,
                      demo.EVE: Level.public, demo.GUEST: Level.public}
    assert await d.user_level(demo.OTHER_BOT) is None
    assert await d.user_level("U_NOBODY") is Level.public  # user_not_found


async def test_a_user_entry_can_lower_a_level_and_unavailable_groups_grant_nothing(standin: SlackStandIn) -> None:
    policy = parse_access({"users": {demo.BOB: "public"}, "groups": {"S_SRE": "restricted"},
                           "domains": {"example.com": "team"}})
    standin.workspace.free_plan = True  # usergroups.users.list -> plan_upgrade_required
    d = directory(standin, policy)
    assert await d.user_level(demo.BOB) is Level.public
    assert await d.user_level(demo.DAN) is Level.team  # the group lookup failed: the domain remains


async def test_lookups_are_cached_until_the_ttl(standin: SlackStandIn) -> None:
    d = directory(standin, ttl_s=0.2)
    await d.user_level(demo.BOB)
    await d.user_level(demo.BOB)
    assert len(standin.calls_to("users.info")) == 1
    await d.audience(demo.ENG)
    await d.audience(demo.ENG)
    assert len(standin.calls_to("conversations.info")) == 1
    await asyncio.sleep(0.25)
    await d.user_level(demo.BOB)
    assert len(standin.calls_to("users.info")) > 1


async def test_audiences_of_each_kind_of_conversation(standin: SlackStandIn) -> None:
    d = directory(standin)
    audiences = {c: await d.audience(c) for c in (demo.GENERAL, demo.ENG, demo.SRE, demo.PARTNERS)}
    assert {c: a.level for c, a in audiences.items()} == {
        demo.GENERAL: Level.public, demo.ENG: Level.team, demo.SRE: Level.restricted, demo.PARTNERS: Level.public}
    dm = await d.audience(standin.dm_channel(demo.ALICE))
    assert dm.direct and dm.cap(Level.restricted) is Level.restricted
    assert (await d.audience("C_UNKNOWN")).level is Level.public


async def test_members_are_read_page_by_page_and_one_guest_makes_a_channel_public(standin: SlackStandIn) -> None:
    ws = standin.workspace
    members = [f"U_M{i:03d}" for i in range(450)]
    for user in members:
        ws.add_user(user, user.lower(), f"{user.lower()}@example.com")
    ws.add_user("U_LATE_GUEST", "late", "late@example.com", is_ultra_restricted=True)
    ws.add_channel("C_BIG", "big", [*members, "U_LATE_GUEST", ws.bot_user_id], is_private=True)
    d = directory(standin)
    assert (await d.audience("C_BIG")).level is Level.public
    assert len(standin.calls_to("conversations.members")) == 3
    ws.add_channel("C_BIG_TEAM", "big-team", [*members, ws.bot_user_id], is_private=True)
    assert (await d.audience("C_BIG_TEAM")).level is Level.team


async def test_failed_conversation_lookups_mean_public(standin: SlackStandIn) -> None:
    standin.fail_next("conversations.info", Failure("internal_error"))
    standin.fail_next("conversations.members", Failure("ratelimited", status=500))
    d = directory(standin)
    assert (await d.audience(demo.SRE)).level is Level.public
    assert (await directory(standin).audience(demo.SRE)).level is Level.public


# -- the matrix ------------------------------------------------------------------------------------

LEVEL_OF = {demo.ALICE: Level.restricted, demo.BOB: Level.team, demo.DAN: Level.restricted,
            demo.EVE: Level.public, demo.GUEST: Level.public}  # what the demo access file says
QUESTIONS = [
    "who approves break-glass access to the production database?",
    "what are the first steps of the security incident procedure?",
    "how does the on-call rotation and handover work?",
    "how do I set up the VPN?",
]


def shingles(text: str, n: int = 6) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {" ".join(words[i:i + n]) for i in range(len(words) - n + 1)}


def doc_levels() -> dict[Path, Level]:
    levels = {}
    for path in SAMPLE_DOCS.rglob("*.md"):
        found = re.search(r"^access:\s*(\w+)", path.read_text(), re.M)
        levels[path] = Level.parse(found.group(1)) if found else Level.restricted
    return levels


def forbidden_for(level: Level) -> tuple[set[str], set[str]]:
    """Word runs and titles found only in documents above `level`."""
    above, allowed, titles = set(), set(), set()
    for path, doc_level in doc_levels().items():
        text = path.read_text()
        if doc_level > level:
            above |= shingles(text)
            titles.add(re.search(r"^title:\s*\"?(.+?)\"?$", text, re.M).group(1))
        else:
            allowed |= shingles(text)
    return above - allowed, titles


def lowest_reader(standin: SlackStandIn, channel: str) -> Level:
    info = standin.workspace.channels[channel]
    if info["is_ext_shared"] or info["is_shared"]:
        return Level.public
    if info["is_im"]:
        return LEVEL_OF[info["user"]]
    return min(LEVEL_OF[m] for m in info["members"] if m in LEVEL_OF)


@pytest.fixture
async def matrix_slack(sample_engine: Engine, settings: Settings) -> AsyncIterator[LocalSlack]:
    settings = settings.model_copy(update={"bot_user_questions_per_minute": 100})
    engine = Engine(rag_config(settings), sample_engine.store, sample_engine.embedder, sample_engine.generator)
    async with local_slack(settings, engine) as local:
        yield local


async def test_nothing_posted_carries_a_document_above_its_lowest_reader(matrix_slack: LocalSlack) -> None:
    local, standin = matrix_slack, matrix_slack.standin
    seen: list[tuple[Level, str]] = []  # (lowest reader level, what was shown)
    conversations = [demo.GENERAL, demo.ENG, demo.SRE, demo.PARTNERS]
    asked = answered_above_public = 0
    for user in LEVEL_OF:
        dm = standin.dm_channel(user)
        for channel in [*conversations, dm]:
            if user not in standin.workspace.channels[channel]["members"]:
                continue
            for question in QUESTIONS:
                first_call = len(standin.calls)
                ts = standin.post_as_user(channel, user, question)
                event = (local.slack.direct_message(user, dm, question, ts) if channel == dm
                         else local.slack.mention(user, channel, question, ts))
                await local.slack.event(event)
                await local.settle()
                asked += 1
                for offer in [c.params for c in standin.calls[first_call:] if c.method == "chat.postEphemeral"]:
                    for button in buttons(offer):
                        await local.slack.click(user, channel, button, offer)
                        await local.settle()
                for call in standin.calls[first_call:]:
                    if not call.ok:
                        continue
                    if call.method in ("chat.postMessage", "chat.update"):
                        reader = lowest_reader(standin, call.params["channel"])
                    elif call.method in ("chat.postEphemeral", "response_url"):
                        reader = LEVEL_OF[user]
                    else:
                        continue
                    text = visible_text(call.params)
                    seen.append((reader, text))
                    if reader > Level.public and "Sources" in text:
                        answered_above_public += 1
    assert asked == 4 * (5 + 3 + 2 + 2 + 5)
    assert answered_above_public >= 10  # the matrix really produced answers from non-public docs
    for level in Level:
        runs, titles = forbidden_for(level)
        for reader, text in seen:
            if reader == level:
                leaked = shingles(text) & runs
                assert not leaked, (level, text[:300], sorted(leaked)[:3])
                assert not [t for t in titles if t in text], (level, text[:300])
