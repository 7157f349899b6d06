"""A path no document can have is "no page" on every store (issue 51): a NUL, which PostgreSQL's
text refuses (the query failed, and read_doc said the index was unavailable), or a lone surrogate,
which UTF-8 cannot encode. Read through the store, then through the MCP SDK's client and a real
`docsbot mcp` on the same index."""
from __future__ import annotations

import os

import pytest

from agents.tools import not_found
from rag import Engine, Level
from tests.support.mcp import error_of, over_stdio

BREAK_GLASS = "runbooks/emergency-db-access.md"
REFUSED_AS_TEXT = [BREAK_GLASS + "\x00", "runbooks/\x00emergency-db-access.md", "\x00", BREAK_GLASS + "\ud800"]


@pytest.mark.parametrize("path", REFUSED_AS_TEXT)
async def test_a_path_the_index_cannot_hold_has_no_rows_on_every_store(any_sample_engine: Engine, path: str) -> None:
    assert await any_sample_engine.store.doc_rows(path, int(Level.restricted)) == []
    assert await any_sample_engine.store.doc_rows(BREAK_GLASS, int(Level.restricted))  # the page is there


async def test_read_doc_of_a_path_with_a_nul_is_no_page_over_mcp_on_every_store(any_sample_engine: Engine) -> None:
    index = any_sample_engine.config.index
    env = {**os.environ, "DOCSBOT_DATA_DIR": index.data_dir, "DOCSBOT_INDEX_URL": index.url}
    async with over_stdio(env) as session:
        for path in ("onboarding/vpn-setup.md\x00", "\x00"):
            assert (await error_of(session, "read_doc", path=path)).endswith(not_found(path))
