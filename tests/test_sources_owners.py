"""Owners, gaps and the weekly digest with several sources (DOCSBOT_SOURCES): each source's
CODEOWNERS (under its own repo_subdir) and front matter own its documents in the shared index;
a gap's area names its source, `/docs gaps <source>` reads one, and each owner's digest DM,
sent through the real app to the Slack stand-in, holds their source's gaps only."""
from __future__ import annotations

import tomllib
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bot.access import parse_access
from bot.digest import send_digests
from bot.local import demo
from bot.local.harness import local_slack
from foundation.settings import Settings
from foundation.wiring import gaps_config, open_engine, sync_config
from insights.gaps import GapFinder
from rag import Answer, Citation, Diagnostics, Engine, Level, index_ownership, open_index
from rag.embeddings import LocalMiniLM
from state.gaps import Reader
from sync.service import run_sync
from tests.test_gaps import command, digests
from tests.test_sync_sources import page, repo_with, settings_for, write_sources

LEAVE, DISK, BACKUP = ("how do I carry over leave to next year?", "what if the disk fills up again overnight?",
                       "how long are database backups kept?")
POLICY = """
admins = ["U_ALICE"]
[owners]
"@acme/people-team" = "U_BOB"   # handbook's CODEOWNERS
"@acme/sre" = "U_DAN"           # runbooks' CODEOWNERS, under its docs/ folder
"dba-team" = "U_DAN"            # a runbook's front matter
"""


def sources(tmp_path: Path) -> Settings:
    handbook = repo_with(tmp_path / "handbook", {
        "CODEOWNERS": "/people/ @acme/people-team\n",
        "README.md": page("Handbook", "How the team works."),
        "people/leave.md": page("Leave", "Holidays are booked in the HR tool."),
    })
    runbooks = repo_with(tmp_path / "runbooks", {
        ".github/CODEOWNERS": "/docs/alerts/ @acme/sre\n/people/ @not/this-source\n",
        "docs/alerts/disk.md": page("Disk full", "Run the cleanup job, then grow the volume."),
        "docs/db/backup.md": "---\nowner: dba-team\n---\n" + page("Backups", "Backups run nightly."),
        "docs/people/leave.md": page("On-call leave", "Swap your on-call shift before leave."),
    })
    listed = [{"name": "handbook", "repo": str(handbook), "default_level": "public"},
              {"name": "runbooks", "repo": str(runbooks), "repo_subdir": "docs", "default_level": "public"}]
    return settings_for(tmp_path, write_sources(tmp_path / "sources.toml", listed))


def unanswered(question: str, doc_path: str) -> Answer:
    """An "I don't know" whose closest section was `doc_path` (as the engine logs one)."""
    near = Citation(1, doc_path, "", "", "", "", "", "", 0.3)
    return Answer(question, "I don't know.", False, "no_match", [], Diagnostics(), "public", near_miss=near)


def test_each_source_owns_its_documents_with_its_own_codeowners_and_front_matter(
        tmp_path: Path, embedder: LocalMiniLM) -> None:
    settings = sources(tmp_path)
    run_sync(sync_config(settings), embedder)
    owners = index_ownership(open_index(sync_config(settings).rag.index).meta())
    assert owners.owners_for("handbook:people/leave.md") == ["@acme/people-team"]
    assert owners.owners_for("runbooks:alerts/disk.md") == ["@acme/sre"]  # `/docs/alerts/`: its repo_subdir
    assert owners.owners_for("runbooks:db/backup.md") == ["dba-team"]
    assert owners.owners_for("runbooks:people/leave.md") == []  # the other source's rule is not its own
    assert owners.owners_for("handbook:README.md") == [] and owners.owners_for("people/leave.md") == []


async def test_gaps_and_the_digest_group_by_source_and_reach_each_sources_owners(
        tmp_path: Path, embedder: LocalMiniLM) -> None:
    settings = sources(tmp_path)
    run_sync(sync_config(settings), embedder)
    engine: Engine = open_engine(settings)
    async with local_slack(settings, engine, policy=parse_access(tomllib.loads(POLICY))) as local:
        log = local.bot.services.answer_log
        for question, doc in ((LEAVE, "handbook:people/leave.md"), (DISK, "runbooks:alerts/disk.md"),
                              (BACKUP, "runbooks:db/backup.md")):
            await log.record(unanswered(question, doc), asker=demo.EVE, asker_level="public",
                             audience_level="public", channel=demo.GENERAL, public_channel=True)
        now = datetime.now(timezone.utc) + timedelta(minutes=1)
        until = int(now.timestamp() * 1000)
        report = await GapFinder(log.db, engine, gaps_config(settings)).report(
            Level.restricted, until - 7 * 86_400_000, until, Reader())
        assert {g.page.path: g.page.owners for g in report.gaps if g.page} == {
            "handbook:people/leave.md": ("@acme/people-team",), "runbooks:alerts/disk.md": ("@acme/sre",),
            "runbooks:db/backup.md": ("dba-team",)}
        assert set(report.areas) == {"handbook:people", "runbooks:alerts", "runbooks:db"}
        assert {g.page.path for g in report.in_area("runbooks").gaps if g.page} == {
            "runbooks:alerts/disk.md", "runbooks:db/backup.md"}
        assert report.owners() == {"@acme/people-team", "@acme/sre", "dba-team"}

        assert sorted(await send_digests(local.bot.services, local.bot.client, now)) == [demo.BOB, demo.DAN]
        sent = digests(local)
        [bob], [dan] = sent[demo.BOB], sent[demo.DAN]
        assert "handbook:people" in bob and "owners @acme/people-team" in bob
        assert "runbooks" not in bob and "Disk full" not in bob  # another source's owners' gaps
        assert "runbooks:alerts" in dan and "runbooks:db" in dan and "Leave" not in dan
        shown = await command(local, demo.ALICE, "gaps runbooks")  # an admin, one source
        assert "Disk full" in shown and "Backups" in shown and "handbook" not in shown
