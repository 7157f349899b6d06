"""The console's 👎 form records what the person typed (the README's feedback walk-through)."""
from __future__ import annotations

import pytest

from bot.local import demo
from bot.local.console import Console
from bot.local.harness import local_slack
from foundation.settings import Settings
from rag.engine import Engine


async def test_thumbs_down_form_in_the_console_records_reason_and_expectation(
    sample_engine: Engine, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    typed = iter(["2", "the 2026 VPN page"])  # "It is out of date", then what was expected
    async with local_slack(settings, sample_engine) as local:
        console = Console(local, read=lambda prompt: print(prompt) or next(typed))
        await console.handle("@docsbot how do I set up the VPN?")
        shown = capsys.readouterr().out
        [down] = [n for n, (_, button, _) in enumerate(console.buttons, 1) if "👎" in button["text"]["text"]]
        await console.handle(f":click {down}")
        shown = capsys.readouterr().out
        assert "[form: What was wrong?]" in shown and "2. It is out of date" in shown
        answer_id = console.buttons[down - 1][1]["value"]
        [vote] = await local.bot.services.answer_log.feedback(answer_id)
    assert (vote.user, vote.vote, vote.reason, vote.expected) == (demo.BOB, "down", "outdated", "the 2026 VPN page")
