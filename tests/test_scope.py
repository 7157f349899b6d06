"""A scope per channel (rag/scope.py, bot/channel_rules.py): questions asked in a channel with a
scope in the access file, to the real aiohttp app with the Slack stand-in and the real index of
docs-sync/. Without a scope, 'how do I roll back a bad deploy?' cites runbooks/rollback.md."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from bot.access import AccessFileError, load_access, parse_access
from bot.local import demo
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import visible_text
from commands.doctor import scope_checks
from foundation.settings import Settings
from rag import Scope
from rag.engine import Engine
from state.answers import AnswerRow
from tests.support.slack import VPN, answers, mention

ROLLBACK = "how do I roll back a bad deploy?"
PAGED = "who gets paged during an incident?"
EMERGENCY = "how do I get production database access in an emergency?"
SCOPES = f"""
[channels.{demo.GENERAL}]
scope = ["adr/**"]

[channels.{demo.ENG}]
level = "team"
scope = ["policies/**"]
scope_mode = "prefer"

[channels.{demo.SRE}]
scope = ["runbooks/**"]
scope_mode = "only"

[channels.{demo.PARTNERS}]
scope = ["runbooks/**", "security/*.md"]
scope_mode = "only"
"""


@pytest.fixture
async def scoped(sample_engine: Engine, settings: Settings, tmp_path: Path) -> Any:
    access = tmp_path / "access.toml"
    access.write_text(demo.ACCESS_FILE.read_text().replace('C_ENG = "team"\n', "") + SCOPES)
    settings = settings.model_copy(update={"access_file": str(access)})
    async with local_slack(settings, sample_engine) as local:
        yield local


async def ask(local: LocalSlack, user: str, channel: str, question: str) -> tuple[AnswerRow, str]:
    """The logged answer to `question` asked in `channel`, and the text the channel reads."""
    await mention(local, user, channel, question)
    await local.settle()
    async with local.bot.services.answer_log.db.begin() as session:
        row = (await session.scalars(select(AnswerRow).where(AnswerRow.channel == channel,
                                                             AnswerRow.question == question))).one()
    return row, visible_text(answers(local, channel)[-1])


def cited(row: AnswerRow) -> set[str]:
    return {c["doc_path"] for c in row.citations}


async def test_prefer_cites_the_scope_first(scoped: LocalSlack) -> None:
    row, text = await ask(scoped, demo.BOB, demo.ENG, ROLLBACK)
    assert row.answered and cited(row) and all(path.startswith("policies/") for path in cited(row))
    assert "looked in all the docs" not in text


async def test_prefer_falls_back_to_all_the_docs_and_says_so(scoped: LocalSlack) -> None:
    row, text = await ask(scoped, demo.BOB, demo.GENERAL, VPN)  # no architecture decision covers the VPN
    assert row.answered and cited(row) == {"onboarding/vpn-setup.md"}
    assert "Nothing in this channel's docs (adr/**) answered this, so I looked in all the docs." in text


async def test_only_cites_the_scope_and_never_leaves_it(scoped: LocalSlack) -> None:
    row, _ = await ask(scoped, demo.DAN, demo.SRE, PAGED)
    assert row.answered and cited(row) == {"runbooks/incident-response.md"}
    row, text = await ask(scoped, demo.DAN, demo.SRE, VPN)  # answered in #general, not here
    assert not row.answered and not cited(row) and "VPN Setup" not in text
    assert "Here I answer only from this channel's docs (runbooks/**)." in text


async def test_the_audience_rules_still_apply_inside_the_scope(scoped: LocalSlack) -> None:
    """#partners is shared with another organisation (public); its scope holds restricted runbooks."""
    row, text = await ask(scoped, demo.DAN, demo.PARTNERS, EMERGENCY)
    assert not row.answered and row.level == "public"
    assert not cited(row) and "tp-prod-db" not in text and "Emergency" not in text


async def test_docs_scope_shows_the_channels_scope(scoped: LocalSlack) -> None:
    for channel in (demo.ENG, demo.SRE, demo.RANDOM):
        await scoped.slack.command(demo.ALICE, channel, "scope")
        await scoped.settle()
    eng, sre, unscoped = (visible_text(r) for r in scoped.standin.responses)
    assert "`policies/**` first (3 indexed documents), then" in eng
    assert "`runbooks/**` first (4 indexed documents), and never anything else" in sre
    assert "no scope" in unscoped


def test_a_scope_in_the_access_file_is_checked() -> None:
    ok = parse_access({"channels": {"C_OPS": {"scope": ["runbooks/**"], "scope_mode": "only"}}})
    assert ok.rules("C_OPS").scope == Scope(("runbooks/**",), "only") and "C_OPS" not in ok.channels
    for entry, problem in [({"scope": "runbooks/**"}, "non-empty list of globs"),
                           ({"scope": ["runbooks/**"], "scope_mode": "strict"}, "`scope_mode` must be one of"),
                           ({"scope": ["../secrets/**"]}, "relative path inside the docs folder"),
                           ({"scope_mode": "only"}, "`scope_mode` needs a `scope`"),
                           ({"followups": "no"}, "`followups` must be true or false"),
                           ({"scopes": ["runbooks/**"]}, "unknown key(s) ['scopes']")]:
        with pytest.raises(AccessFileError, match="C_OPS") as raised:
            parse_access({"channels": {"C_OPS": entry}})
        assert problem in str(raised.value)


def test_doctor_warns_of_a_glob_that_matches_no_document(sample_engine: Engine, settings: Settings,
                                                         tmp_path: Path) -> None:
    access = tmp_path / "access.toml"
    access.write_text(f'[channels.{demo.SRE}]\nscope = ["runbooks/**", "runbook/*.md"]\n')
    [finding] = scope_checks(settings.model_copy(update={"access_file": str(access)}))
    assert finding.status == "warning" and finding.detail == f"{demo.SRE}: `runbook/*.md` matches no indexed document"
    access.write_text(f'[channels.{demo.SRE}]\nscope = ["runbooks/**"]\n')
    assert [f.status for f in scope_checks(settings.model_copy(update={"access_file": str(access)}))] == ["ok"]
    assert load_access(access).rules(demo.SRE).scope == Scope(("runbooks/**",))


async def test_the_scope_filters_both_searches_before_their_top_k(sample_engine: Engine) -> None:
    """A page nowhere in the question's top six is all a search in its scope finds: filtered inside the
    search, before the k, as the access filter is."""
    store, question = sample_engine.store, ROLLBACK
    [vector] = sample_engine.embedder.embed([question])
    within = frozenset({"policies/data-retention.md"})
    everywhere = {h.row["doc_path"] for h in await store.dense(vector, 2, 6)}
    assert "policies/data-retention.md" not in everywhere
    for hits in (await store.dense(vector, 2, 6, within), await store.text(question, 2, 6, within)):
        assert hits and {h.row["doc_path"] for h in hits} == set(within)
    assert await store.dense(vector, 2, 6, frozenset()) == [] == await store.text(question, 2, 6, frozenset())
    assert Scope(("policies/**",)).within(await store.documents()) == {
        "policies/data-retention.md", "policies/deploy-policy.md", "policies/release-process.md"}
