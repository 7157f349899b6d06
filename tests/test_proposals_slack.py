"""Docs changes proposed from Slack (issue 53): the message shortcut on a person's answer in the
thread of a question docsbot was not sure of opens the draft, its submission (as Slack submits
`view_submission`) pushes a docsbot/* branch over real git to a local GitHub and opens the pull
request, and the thread is told. Private words stay out of the request without consent; a page
above the proposer's level is refused as a page that is not there; a day's limit holds."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from bot import proposal_form
from bot.local import demo
from bot.local.harness import LocalSlack, local_slack
from foundation.settings import Settings
from foundation.wiring import open_engine, open_state_db
from rag import Engine, ExtractiveAnswerer, Level, LocalMiniLM
from state.proposals import Proposals
from tests.standins.forge import LocalForge
from tests.support.corpus import indexed_pages
from tests.support.settings import make_settings
from tests.support.slack import answers, mention
from tests.test_proposals import git, seed

TOKEN = "forge-token-slack-1"
DEPLOY = ("---\ntitle: Deploying\naccess: public\nowner: \"@bob\"\n---\n# Deploying\n\n## Staging\n\n"
          "Deploy to staging with `make stage` from the release branch.\n\n## Production\n\n"
          "Production deploys need the on-call lead's approval.\n")
VAULT = ("---\ntitle: Vault\naccess: restricted\n---\n# Vault\n\n## Unsealing\n\n"
         "Unseal the vault with the recovery word.\n")
QUESTION = "Do staging deploys need the VPN?"
REPLY = "Yes: staging deploys need the VPN on, or make stage times out."


@pytest.fixture
def forge(tmp_path: Path) -> Iterator[LocalForge]:
    server = LocalForge(tmp_path / "forge", "github", TOKEN).start()
    seed(server.repository("acme/handbook"), tmp_path / "seed", {"docs/ops/deploy.md": DEPLOY, "docs/vault.md": VAULT})
    yield server
    server.stop()


def proposing(tmp_path: Path, forge: LocalForge, embedder: LocalMiniLM, **overrides: Any) -> tuple[Settings, Engine]:
    data = indexed_pages(tmp_path / "docs", embedder, {"ops/deploy.md": DEPLOY, "vault.md": VAULT})
    settings = make_settings(Path(data), repo=SecretStr(forge.git_url("acme/handbook").replace(
        "http://", f"http://docsbot:{TOKEN}@")), repo_subdir="docs", branch="main", forge="github",
        forge_api_url=forge.api_url, forge_project="acme/handbook", work_dir=str(tmp_path / "work"),
        database_url=SecretStr(f"sqlite:///{tmp_path / 'state.db'}"), **overrides)
    engine = open_engine(settings, generator=ExtractiveAnswerer())
    engine.embedder = embedder
    return settings, engine


def opened_form(local: LocalSlack) -> dict[str, Any]:
    return local.standin.calls_to("views.open", ok_only=True)[-1]["view"]


def state(page: str, section: str, text: str, title: str = "", quote: bool = False) -> dict[str, dict[str, Any]]:
    """The form's view.state.values as Slack sends them."""
    def typed(key: str, value: str) -> dict[str, Any]:
        return {key: {"type": "plain_text_input", "value": value or None}}

    ticked = [{"text": {"type": "plain_text", "text": "Quote"}, "value": "yes"}] if quote else []
    return {proposal_form.PAGE: typed(proposal_form.PAGE, page),
            proposal_form.SECTION: typed(proposal_form.SECTION, section),
            proposal_form.TITLE: typed(proposal_form.TITLE, title), proposal_form.TEXT: typed(proposal_form.TEXT, text),
            proposal_form.QUOTE: {proposal_form.QUOTE: {"type": "checkboxes", "selected_options": ticked}}}


def private_notes(local: LocalSlack, user: str) -> list[str]:
    return [p["text"] for p in local.standin.calls_to("chat.postEphemeral", ok_only=True) if p["user"] == user]


async def test_an_answer_in_a_public_thread_becomes_a_pull_request_and_the_thread_is_told(
        tmp_path: Path, forge: LocalForge, embedder: LocalMiniLM) -> None:
    settings, engine = proposing(tmp_path, forge, embedder)
    async with local_slack(settings, engine) as local:
        ts, _ = await mention(local, demo.BOB, demo.GENERAL, QUESTION)
        await local.settle()
        [answer] = answers(local, demo.GENERAL)
        assert "Deploying › Staging" in answer["text"]  # not sure: the closest section, named
        reply_ts = local.standin.post_as_user(demo.GENERAL, demo.ALICE, REPLY, ts)
        reply = {"type": "message", "user": demo.ALICE, "text": REPLY, "ts": reply_ts, "thread_ts": ts}

        assert (await local.slack.message_shortcut(demo.ALICE, demo.GENERAL, proposal_form.SHORTCUT, reply)).status \
            == 200
        await local.settle()
        form = opened_form(local)
        inputs = {b["block_id"]: b["element"].get("initial_value", "") for b in form["blocks"]}
        assert inputs[proposal_form.PAGE] == "ops/deploy.md" and inputs[proposal_form.TEXT] == REPLY
        assert proposal_form.QUOTE not in inputs  # a public channel: nothing to consent to
        assert len(forge.calls) == 0  # nothing leaves Slack before the draft is sent

        empty = await local.slack.submit_view(demo.ALICE, form, state("ops/deploy.md", "Staging", ""))
        assert json.loads(empty.body)["response_action"] == "errors"
        sent = await local.slack.submit_view(demo.ALICE, form, state("ops/deploy.md", "Staging", REPLY))
        assert sent.status == 200
        await local.settle()

    [pull] = forge.requests["acme/handbook"]
    assert pull.base == "main" and pull.head.startswith("docsbot/") and pull.reviewers == ["bob"]
    assert f"> {QUESTION}" in pull.body and f"/archives/{demo.GENERAL}/p{ts.replace('.', '')}" in pull.body
    bare = forge.root / "acme/handbook.git"
    page = git(bare, "show", f"{pull.head}:docs/ops/deploy.md")
    assert f"the release branch.\n\n{REPLY}\n\n## Production" in page
    assert "Co-authored-by: alice <alice@example.com>" in git(bare, "log", "-1", "--format=%B", pull.head)
    told = [m for m in local.standin.messages[demo.GENERAL] if m.get("thread_ts") == ts and m.get("bot_id")]
    assert any("proposed adding this to the docs" in m["text"] and "/pull/1" in m["text"] for m in told)
    db = await open_state_db(settings)
    try:
        [recorded] = await Proposals(db).open(Level.public)
    finally:
        await db.close()
    assert (recorded.branch, recorded.url, recorded.channel, recorded.thread_ts, recorded.proposer) == (
        pull.head, f"http://127.0.0.1:{forge.port}/acme/handbook/pull/1", demo.GENERAL, ts, demo.ALICE)


async def test_private_words_need_consent_and_a_page_above_the_proposer_is_not_there(
        tmp_path: Path, forge: LocalForge, embedder: LocalMiniLM) -> None:
    settings, engine = proposing(tmp_path, forge, embedder, proposals_per_day=2)
    async with local_slack(settings, engine) as local:
        channel = local.standin.dm_channel(demo.EVE)
        ts = local.standin.post_as_user(channel, demo.EVE, QUESTION)
        await local.slack.event(local.slack.direct_message(demo.EVE, channel, QUESTION, ts))
        await local.settle()
        [answer] = answers(local, channel)
        # Eve uses the shortcut on the bot's answer in her DM: no words prefilled, and the box
        # to quote her own question, off
        await local.slack.message_shortcut(demo.EVE, channel, proposal_form.SHORTCUT, answer)
        await local.settle()
        form = opened_form(local)
        inputs = {b["block_id"]: b["element"] for b in form["blocks"]}
        assert "initial_value" not in inputs[proposal_form.TEXT] and proposal_form.QUOTE in inputs
        await local.slack.submit_view(demo.EVE, form, state("ops/deploy.md", "Staging", "Turn the VPN on first."))
        await local.settle()
        # then a page above her level, named directly: refused as a page that is not there
        await local.slack.submit_view(demo.EVE, form, state("vault.md", "Unsealing", "Ask the lead."))
        await local.settle()
        # and a third proposal the same day (limit 2): refused before anything is read
        await local.slack.submit_view(demo.EVE, form, state("ops/deploy.md", "Production", "Page the lead."))
        await local.settle()
        notes = private_notes(local, demo.EVE)

    [pull] = forge.requests["acme/handbook"]
    assert "A question asked in Slack." in pull.body and QUESTION not in pull.body
    assert proposal_form.NOT_READABLE in notes and proposal_form.LIMITED in notes
    assert set(forge.refs("acme/handbook")) == {"refs/heads/main", f"refs/heads/{pull.head}"}
