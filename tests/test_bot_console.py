"""The local console: typed lines become signed requests to the bot, replies are shown as text."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.local import demo
from bot.local.console import Console, readable
from bot.local.harness import local_slack
from foundation.settings import Settings
from rag.engine import Engine


async def test_console_speaks_as_people_in_channels_and_shows_replies(
    sample_engine: Engine, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    async with local_slack(settings, sample_engine) as local:
        console = Console(local)
        assert console.prompt() == "[bob in #general]> "
        for line in (":user alice", "@docsbot who approves break-glass access to the production database?"):
            assert await console.handle(line)
        shown = capsys.readouterr().out
        assert "docsbot → #general (edited)" in shown and "above your access level" in shown
        assert "docsbot → only alice sees this" in shown and "[3: Answer me in a DM]" in shown
        await console.handle(":click 3")
        shown = capsys.readouterr().out
        assert "docsbot → DM with alice" in shown and "Break-Glass" in shown
        await console.handle(":channel random")
        await console.handle("/docs how do I set up the VPN?")
        shown = capsys.readouterr().out
        assert "only you see this" in shown and "/invite @docsbot" in shown and "VPN Setup" in shown
        assert "docsbot → #random" not in shown  # the refused post is not shown as if it had worked
        await console.handle(":channel general")
        await console.handle("@docsbot how do I set up the VPN?")
        await console.handle(":thread")
        await console.handle("and what if it works at home but not in a hotel?")  # a follow-up, no mention
        shown = capsys.readouterr().out
        assert shown.count("docsbot → #general (edited)") == 2 and "tcp-fallback" in shown
        assert local.standin.calls_to("conversations.replies") == []  # read from docsbot's record
        await console.handle(":channel nowhere")
        assert "no such channel" in capsys.readouterr().out
        assert not await console.handle(":quit")
        assert console.user == demo.ALICE


def test_mrkdwn_reads_as_plain_text() -> None:
    names = {"U_ALICE": "alice"}.get
    assert readable("<@U_ALICE> see <https://x.example/a|Doc › Part> &amp; &lt;b&gt;", names) == \
        "@alice see Doc › Part (https://x.example/a) & <b>"


async def test_every_surface_is_reachable_from_the_console(
    sample_engine: Engine, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    async with local_slack(settings, sample_engine) as local:
        console = Console(local)
        await console.handle(":channel dm")
        await console.handle(":user eve")  # not bob's DM any more: eve's own
        assert console.prompt() == "[eve in DM with docsbot]> " and "eve's own DM" in capsys.readouterr().out
        await console.handle(":user bob")
        await console.handle(":home")
        shown = capsys.readouterr().out
        assert "[Home tab of bob]" in shown and "level *team*" in shown
        await console.handle(":channel general")
        await console.handle(":assistant")
        shown = capsys.readouterr().out
        assert "opened from #general" in shown and "suggested 1: What do the docs say about" in shown
        await console.handle("how do I set up the VPN?")
        shown = capsys.readouterr().out
        assert "docsbot → DM with bob in thread" in shown and "VPN Setup" in shown
        await console.handle(":react -1")
        shown = capsys.readouterr().out
        assert "bob reacted :-1:" in shown and "Thanks for the 👎" in shown, shown
        await console.handle(":channel general")
        await console.handle(":agent")  # the agent view, looking at #general
        assert "agent view, looking at #general" in capsys.readouterr().out
        await console.handle("how do I roll back a bad deploy?")  # a team page: not for #general's readers
        shown = capsys.readouterr().out
        assert "docsbot → DM with bob" in shown and "Answered for" in shown and "Rollback ›" not in shown, shown


def test_the_console_is_not_rate_limited_in_normal_use(tmp_path: Path) -> None:
    """`docsbot console` as a person runs it: eight questions in a row are all answered, with no
    "You've asked 6 questions" and no operator WARNING line in the chat."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "restart.md").write_text("---\naccess: public\n---\n# Restart the API server\n\n"
                                     "To restart the API server, delete its pods with oc delete pod.\n")
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    env = {**clean, "DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_DOCS_DIR": str(docs)}
    typed = ":channel dm\n" + "how do I restart the API server?\n" * 8 + ":quit\n"
    done = subprocess.run([sys.executable, "-m", "commands.cli", "console"], input=typed, env=env, text=True,
                          capture_output=True, timeout=600)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    # each answer once, with its sources (an answer slow under load also shows its plan: another edit)
    assert out.count("[1] Restart the API server") == 8, out
    assert "You've asked" not in out and "WARNING" not in out, out
