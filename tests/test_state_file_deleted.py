"""The SQLite state database file deleted while the bot serves (real bot over HTTP, real SQLite):
it is noticed and restored at its path from the open connection, so the answer logged before
and the 👍 cast after are both in the file on disk, not in the deleted one."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from pydantic import SecretStr

from bot.blocks import FEEDBACK_UP
from bot.deliveries import buttons
from bot.local import demo
from bot.local.harness import local_slack
from foundation.settings import Settings
from rag.engine import Engine
from tests.support.slack import VPN, answers


def on_disk(path: Path, query: str) -> int:
    with sqlite3.connect(path) as connection:
        return connection.execute(query).fetchone()[0]


async def test_a_deleted_state_file_is_restored_with_its_answers_and_votes(
        sample_engine: Engine, settings: Settings, tmp_path: Path) -> None:
    path = tmp_path / "state" / "state.db"
    settings = settings.model_copy(update={"database_url": SecretStr(f"sqlite:///{path}")})
    async with local_slack(settings, sample_engine) as local:
        ts = local.standin.post_as_user(demo.GENERAL, demo.BOB, f"<@{local.standin.workspace.bot_user_id}> {VPN}")
        assert (await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, ts))).status == 200
        await local.settle()
        [message] = answers(local, demo.GENERAL)
        path.unlink()  # an operator's rm, a cleanup job
        async with local.slack.session.get(local.base_url + "/readyz") as response:
            readiness = await response.json()  # the harness never verifies Slack auth: "slack" is a problem
        assert "state_file" not in readiness["problems"] and path.exists()  # noticed, and restored
        [up] = [b for b in buttons(message) if b["action_id"] == FEEDBACK_UP]
        assert (await local.slack.click(demo.BOB, demo.GENERAL, up, message)).status == 200
        await local.settle()
        assert path.exists()
        assert on_disk(path, "SELECT count(*) FROM answers") == 1
        assert on_disk(path, "SELECT count(*) FROM feedback") == 1
