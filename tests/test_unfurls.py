"""Docs links that unfurl (issue 52 item 3): `link_shared` events as Slack's reference shows them
(a posted message, and a link still in the composer), signed, to the real app over a real index
of a git repository with an MkDocs site; the Slack stand-in takes `chat.unfurl` as Slack does.
Only public pages unfurl, whatever the channel; nothing is sent (or said) for any other link."""
from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.local import demo
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import visible_text
from eval.repos import run_git
from foundation.wiring import lease_config, open_engine
from rag import LocalMiniLM
from sync.folder import index_folder
from tests.support.settings import make_settings

SITE, REPO = "https://docs.example.com", "https://git.example.com/acme/handbook"
REVIEWED = date.today() - timedelta(days=10)
FILES = {
    "mkdocs.yml": "site_name: Handbook\n",
    "docs/guides/vpn.md": f"---\naccess: public\nowner: \"@acme/network\"\nlast_reviewed: {REVIEWED}\n---\n"
                          "# VPN Setup\n\nInstall the client.\n\n## Troubleshooting\n\nUse tcp-fallback in hotels.\n",
    "docs/guides/old-wiki.md": "---\naccess: public\nlast_reviewed: 2024-01-10\nreview_in: 30\n---\n"
                               "# Old wiki\n\nThe wiki moved.\n",
    "docs/team/oncall.md": "---\naccess: team\nowner: \"@acme/sre\"\n---\n# On-call rota\n\nPage the SRE lead.\n",
}
VPN_PAGE = f"{SITE}/guides/vpn/"
OLD_FILE = f"{REPO}/blob/main/docs/guides/old-wiki.md"
TEAM_PAGE = f"{SITE}/team/oncall/"


@pytest.fixture
async def handbook(tmp_path: Path, embedder: LocalMiniLM) -> AsyncIterator[LocalSlack]:
    repo = tmp_path / "repo"
    for rel, text in FILES.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    run_git(repo, "init", "-q")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-qm", "docs")
    settings = make_settings(tmp_path / "index", docs_dir=str(repo / "docs"), repo_subdir="docs",
                             repo_web=REPO, site_url=SITE + "/", default_level="restricted")
    engine = open_engine(settings)
    engine.embedder = embedder
    index_folder(engine, lease_config(settings), repo / "docs")
    async with local_slack(settings, engine) as local:
        yield local


def link_shared(local: LocalSlack, channel: str, ts: str, urls: list[str], composer: bool = False) -> dict[str, Any]:
    links = [{"domain": url.split("/")[2], "url": url} for url in urls]
    if composer:  # before the message is posted: no conversation yet
        return {"type": "link_shared", "channel": "COMPOSER", "is_bot_user_member": False, "user": demo.BOB,
                "message_ts": "Uf1234567-7a3d2b1c-0000-4b5c-9d1e-2f3a4b5c6d7e", "unfurl_id": "Uf1234567-7a3d2b1c",
                "source": "composer", "links": links, "event_ts": local.standin.next_ts()}
    return {"type": "link_shared", "channel": channel, "is_bot_user_member": True, "user": demo.BOB,
            "message_ts": ts, "unfurl_id": f"{channel}.{ts}.abc", "source": "conversations_history",
            "links": links, "event_ts": local.standin.next_ts()}


async def pasted(local: LocalSlack, channel: str, urls: list[str]) -> str:
    ts = local.standin.post_as_user(channel, demo.BOB, "see " + " and ".join(f"<{u}>" for u in urls))
    assert (await local.slack.event(link_shared(local, channel, ts, urls))).status == 200
    await local.settle()
    return ts


async def test_a_pasted_public_page_unfurls_with_owner_age_and_review_state(handbook: LocalSlack) -> None:
    local = handbook
    urls = [f"{VPN_PAGE}#troubleshooting", OLD_FILE, TEAM_PAGE, f"{SITE}/no/such/page/", "https://example.org/x"]
    ts = await pasted(local, demo.GENERAL, urls)
    [call] = local.standin.calls_to("chat.unfurl", ok_only=True)
    assert call["channel"] == demo.GENERAL and call["ts"] == ts
    cards = local.standin.unfurls[(demo.GENERAL, ts)]
    assert set(cards) == {f"{VPN_PAGE}#troubleshooting", OLD_FILE}  # the team page, and the rest: nothing
    vpn, old = (visible_text(cards[url]) for url in (f"{VPN_PAGE}#troubleshooting", OLD_FILE))
    docs = Path(local.bot.services.engine.store.meta()["docs_root"])
    commit, day = run_git(docs, "rev-parse", "HEAD"), run_git(docs, "log", "-1", "--format=%cs")
    assert f"<{VPN_PAGE}|VPN Setup › Troubleshooting>" in vpn and "Owner @acme/network" in vpn
    assert f"Last change {day} <{REPO}/blob/{commit}/docs/guides/vpn.md|`{commit[:7]}`>" in vpn
    assert f"Review due {REVIEWED + timedelta(days=365)} (reviewed {REVIEWED})" in vpn
    assert "Level public" in vpn and "⚠" not in vpn
    assert "Old wiki" in old and "No owner named" in old and "⚠ last reviewed" in old  # 30-day review: overdue
    assert not local.standin.calls_to("chat.postEphemeral") and not local.standin.calls_to("chat.postMessage")


async def test_a_page_above_public_unfurls_nowhere_and_nothing_says_why(handbook: LocalSlack) -> None:
    local = handbook
    for channel in (demo.ENG, demo.GENERAL, local.standin.dm_channel(demo.BOB)):  # a team channel, public, a DM
        await pasted(local, channel, [TEAM_PAGE, f"{REPO}/blob/main/docs/team/oncall.md"])
    assert [c.method for c in local.standin.calls if c.method.startswith("chat.")] == []


async def test_a_link_in_the_composer_unfurls_public_pages_only(handbook: LocalSlack) -> None:
    local = handbook
    event = link_shared(local, "", "", [VPN_PAGE, TEAM_PAGE], composer=True)
    assert (await local.slack.event(event)).status == 200
    await local.settle()
    [call] = local.standin.calls_to("chat.unfurl", ok_only=True)
    assert call["unfurl_id"] == event["unfurl_id"] and call["source"] == "composer" and "channel" not in call
    assert list(local.standin.unfurls[("composer", event["unfurl_id"])]) == [VPN_PAGE]
