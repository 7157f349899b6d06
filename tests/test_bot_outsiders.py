"""People of another organisation (Slack Connect) read at `public` unless the access file names
them by user ID (issue 51): `[defaults] member`, `[domains]` and `[groups]` grant only the people
of the organisation that installed the bot, an Enterprise Grid's every workspace, else the one
workspace (auth.test). Through the real app with Slack-signed events; the Slack stand-in answers
users.info with Slack's shapes (`user.team_id`, `user.enterprise_user.enterprise_id`, `is_stranger`)."""
from __future__ import annotations

from pydantic import SecretStr

from bot.access import AccessFile, parse_access
from bot.app import web_client
from bot.directory import Directory
from bot.local import demo
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import Failure, SlackStandIn, Workspace
from foundation.settings import Settings
from rag import Level
from rag.engine import Engine
from tests.support.slack import answers, mention
from tests.test_bot_audience import ROTATION, answered_level  # on-call.md, a `team` page

PARTNER = "U_PARTNER"  # Slack Connect: a person of another organisation, in #partners
STRANGER = "U_STRANGER"  # another organisation's, Slack calls a stranger
NAMED = "U_NAMED_PARTNER"  # another organisation's, named in the access file
SIBLING = "W_SIBLING"  # another workspace of the same Enterprise Grid
OTHER_GRID = "W_GLOBEX"  # a workspace of another Enterprise Grid
POLICY = parse_access({"defaults": {"member": "team"}, "domains": {"partner.example": "team"},
                       "groups": {"S_PARTNERS": "team"}, "users": {NAMED: "team"}})


def with_outsiders(ws: Workspace) -> Workspace:
    """Another organisation's people (not an Enterprise Grid's), one of them in #partners, in a
    user group and at a domain the access file grants."""
    outside = {"team_id": "T_PARTNER", "enterprise_user": None}
    ws.add_user(PARTNER, "pat", "pat@partner.example", **outside)
    ws.add_user(STRANGER, "sam", "sam@partner.example", is_stranger=True, **outside)
    ws.add_user(NAMED, "nat", "nat@partner.example", **outside)
    ws.usergroups["S_PARTNERS"] = [PARTNER]
    ws.channels[demo.PARTNERS]["members"].append(PARTNER)
    return ws


async def dm_level(local: LocalSlack, user: str) -> str:
    """`user` asks about the on-call rotation in a DM (read by them alone): the level it got."""
    dm = local.standin.dm_channel(user)
    ts = local.standin.post_as_user(dm, user, ROTATION)
    assert (await local.slack.event(local.slack.direct_message(user, dm, ROTATION, ts))).status == 200
    await local.settle()
    return await answered_level(local, dm)


def dm_offers(local: LocalSlack, user: str) -> list[dict]:
    return [c for c in local.standin.calls_to("chat.postEphemeral", ok_only=True)
            if c["user"] == user and "dm_offer" in str(c.get("blocks"))]


async def test_another_organisations_people_read_public_unless_named(sample_engine: Engine, settings: Settings) -> None:
    async with local_slack(settings, sample_engine, with_outsiders(demo.demo_workspace()), POLICY) as local:
        levels = {user: await dm_level(local, user) for user in (demo.EVE, PARTNER, STRANGER, NAMED)}
        assert levels == {demo.EVE: "team", PARTNER: "public", STRANGER: "public", NAMED: "team"}
        # In the shared channel both get a public answer; only the member is offered more, in a DM.
        for user in (demo.DAN, PARTNER):
            await mention(local, user, demo.PARTNERS, ROTATION)
            await local.settle()
            assert await answered_level(local, demo.PARTNERS) == "public"
        assert len(dm_offers(local, demo.DAN)) == 1 and dm_offers(local, PARTNER) == []
        assert len(answers(local, demo.PARTNERS)) == 2


async def test_an_enterprise_grids_other_workspaces_are_members_other_grids_are_not(
    sample_engine: Engine, settings: Settings
) -> None:
    ws = demo.demo_workspace()
    ws.enterprise_id = "E_ACME"  # auth.test names the Grid; its people carry enterprise_user
    ws.add_user("W_HOME", "hal", "hal@acme.invalid")
    ws.add_user(SIBLING, "sib", "sib@acme.invalid", team_id="T_ACME_EU",
                enterprise_user={"id": SIBLING, "enterprise_id": "E_ACME", "teams": ["T_ACME_EU"]})
    ws.add_user(OTHER_GRID, "gus", "gus@globex.invalid", team_id="T_GLOBEX",
                enterprise_user={"id": OTHER_GRID, "enterprise_id": "E_GLOBEX", "teams": ["T_GLOBEX"]})
    ws.add_user(PARTNER, "pat", "pat@partner.example", team_id="T_PARTNER", enterprise_user=None)
    async with local_slack(settings, sample_engine, ws, POLICY) as local:
        levels = {user: await dm_level(local, user) for user in ("W_HOME", SIBLING, OTHER_GRID, PARTNER)}
    assert levels == {"W_HOME": "team", SIBLING: "team", OTHER_GRID: "public", PARTNER: "public"}


async def test_without_the_installing_organisation_only_people_named_keep_their_level() -> None:
    """auth.test fails: nobody can be told apart from an outsider, so defaults, groups and domains
    grant nothing until it answers (it is asked again at the next lookup)."""
    standin = await SlackStandIn(with_outsiders(demo.demo_workspace()), demo.TOKEN).start()
    try:
        settings = Settings(_env_file=None, SLACK_BOT_TOKEN=SecretStr(demo.TOKEN), SLACK_API_URL=standin.base_url)
        directory = Directory(web_client(settings), AccessFile.fixed(POLICY), 60)
        standin.fail_next("auth.test", Failure("internal_error"))
        assert await directory.user_level(demo.EVE) is Level.public
        assert await directory.user_level(NAMED) is Level.team
        assert await directory.user_level(demo.BOB) is Level.team  # auth.test answered this time
        assert len(standin.calls_to("auth.test")) == 2
    finally:
        await standin.stop()
