"""Opening the state store: connect, migrate the schema, and import the old answer log once.

Apart from state/db.py (connections and migrations) because the import builds on the answer
log's tables (state/legacy.py, state/answers.py), which build on db.py.
"""
from __future__ import annotations

import asyncio

from state.config import StateConfig
from state.db import StateDB, connect, migrate
from state.legacy import import_lancedb_answer_log


async def open_state(config_or_url: StateConfig | str) -> StateDB:
    """Connect, and migrate the schema to the latest revision first (once per process). With a
    config naming a `legacy_index`, the old LanceDB answer log beside it is imported the first time."""
    config = StateConfig(config_or_url) if isinstance(config_or_url, str) else config_or_url
    await asyncio.to_thread(migrate, config.url)
    db = connect(config.url)
    if config.legacy_index is not None:
        await import_lancedb_answer_log(db, config.legacy_index)
    return db
