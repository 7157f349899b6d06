"""MCP with several sources (DOCSBOT_SOURCES): `read_doc` takes the `source:path` that
`search_docs` gives, through the MCP SDK's client and a real `docsbot mcp` process; two sources
that both hold README.md are two pages, each at its own level and with its own links."""
from __future__ import annotations

import os
from pathlib import Path

from foundation.wiring import sync_config
from rag.embeddings import LocalMiniLM
from sync.service import run_sync
from tests.support.mcp import call, error_of, over_stdio
from tests.test_sync_sources import page, repo_with, settings_for, write_sources


async def test_read_doc_takes_source_and_path_over_mcp(tmp_path: Path, embedder: LocalMiniLM) -> None:
    handbook = repo_with(tmp_path / "handbook", {
        "README.md": page("Handbook", "Holidays are booked in the HR tool by the first of the month.")})
    runbooks = repo_with(tmp_path / "runbooks", {
        "README.md": page("Runbooks", "The break-glass password is rotated after every use.")})
    listed = [{"name": "handbook", "repo": str(handbook), "default_level": "public",
               "repo_web": "https://git.example.com/acme/handbook"},
              {"name": "runbooks", "repo": str(runbooks), "default_level": "restricted"}]
    sources = write_sources(tmp_path / "sources.toml", listed)
    settings = settings_for(tmp_path, sources)
    run_sync(sync_config(settings), embedder)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DOCSBOT_")},
           "DOCSBOT_DATA_DIR": settings.data_dir, "DOCSBOT_SOURCES": str(sources)}
    async with over_stdio(env) as session:  # no --user: public
        found = await call(session, "search_docs", query="when are holidays booked?", limit=5)
        assert [p["doc_path"] for p in found["passages"]] == ["handbook:README.md"]  # runbooks: restricted
        read = await call(session, "read_doc", path="handbook:README.md", section="Details")
        assert read["doc_path"] == "handbook:README.md" and read["section"] == "Details"
        assert "booked in the HR tool" in read["text"]
        assert read["commit_url"].startswith("https://git.example.com/acme/handbook/blob/")
        assert read["commit_url"].endswith("/README.md#details")  # the path in its own repository
        missing = await error_of(session, "read_doc", path="nowhere:README.md")
        for hidden in ("runbooks:README.md", "README.md"):  # above public; no source named
            assert await error_of(session, "read_doc", path=hidden) == missing.replace("nowhere:README.md", hidden)
