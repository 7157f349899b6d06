"""The App Home tab with several sources (DOCSBOT_SOURCES), through the real app: each source's
commit and its age, its documents, and a failing source said as such, why only for admins."""
from __future__ import annotations

import re
from pathlib import Path

from bot.local import demo
from bot.local.harness import local_slack
from bot.local.standin import visible_text
from foundation.wiring import open_engine, sync_config
from rag.embeddings import LocalMiniLM
from sync.service import run_sync
from tests.support.slack import open_home
from tests.test_sync_sources import entries, settings_for, three, write_sources  # noqa: F401


async def test_the_home_tab_lists_each_source_and_a_failing_one(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM) -> None:  # noqa: F811
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", entries(three)))
    run_sync(sync_config(settings), embedder)
    three["devdocs"].rename(tmp_path / "away")  # its fetch fails from now on
    run_sync(sync_config(settings), embedder)
    async with local_slack(settings, open_engine(settings)) as local:
        admin = visible_text(await open_home(local, demo.ALICE))
        member = visible_text(await open_home(local, demo.BOB))
    for home in (admin, member):
        assert re.search(r"source handbook: \w{12} \([\d-]{10}, committed \d+ minutes ago\), 2 documents", home)
        assert re.search(r"source runbooks: \w{12} .*2 documents \(0 readable at the team level\)", home)
        assert "documents: 5" in home and "indexed commit" not in home  # each source has its own
    assert re.search(r"source devdocs: .*\n +FAILED at .*serving its last good commit: git fetch failed: fatal:", admin)
    assert "source devdocs: " in member and "serving its last good commit: admins see why" in member
    assert "git fetch" not in member and str(tmp_path) not in member  # where it fetches from: admins only
