"""The local console: typed lines become signed requests to the bot, replies are shown as text."""
from __future__ import annotations

import pytest

from bot import demo
from bot.console import Console, readable
from bot.local import local_slack
from rag.engine import Engine


async def test_console_speaks_as_people_in_channels_and_shows_replies(
    sample_engine: Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    async with local_slack(sample_engine.settings, sample_engine) as local:
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
        await console.handle(":channel nowhere")
        assert "no such channel" in capsys.readouterr().out
        assert not await console.handle(":quit")
        assert console.user == demo.ALICE


def test_mrkdwn_reads_as_plain_text() -> None:
    names = {"U_ALICE": "alice"}.get
    assert readable("<@U_ALICE> see <https://x.example/a|Doc › Part> &amp; &lt;b&gt;", names) == \
        "@alice see Doc › Part (https://x.example/a) & <b>"
