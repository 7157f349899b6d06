"""The access file deleted while the bot runs: the policy fails closed to the defaults (everyone
public, no admins) at once instead of keeping the old one, the admins of the old one are told, and
the file's return restores it. Real Slack stand-in, real index, the file on disk."""
from __future__ import annotations

import asyncio
from pathlib import Path

from bot.local import demo
from bot.local.harness import local_slack
from foundation.settings import Settings
from rag.engine import Engine
from tests.test_bot_audience import eve_dm_level

POLICY = 'admins = ["U_ALICE"]\n[users]\nU_EVE = "team"\n'


async def test_a_deleted_access_file_fails_closed_and_the_admins_are_told(
    sample_engine: Engine, settings: Settings, tmp_path: Path
) -> None:
    access = tmp_path / "access.toml"
    access.write_text(POLICY)
    settings = settings.model_copy(update={"access_file": str(access)})
    async with local_slack(settings, sample_engine) as local:
        assert await eve_dm_level(local) == "team"
        access.unlink()
        await asyncio.sleep(1.1)  # the file is checked at most once a second
        assert await eve_dm_level(local) == "public"  # fail closed, not the old policy
        assert not local.bot.services.policy.is_admin("U_ALICE")
        told = local.standin.messages[local.standin.dm_channel(demo.ALICE)]
        assert len(told) == 1 and "is gone" in told[0]["text"] and "public docs only" in told[0]["text"], told
        access.write_text(POLICY)
        await asyncio.sleep(1.1)
        assert await eve_dm_level(local) == "team"
