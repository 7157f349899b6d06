"""Alembic environment: run by `state.db.migrate`, which passes an open connection.

Every table module is imported here so `Base.metadata` knows every table (for autogenerate)."""
from __future__ import annotations

from alembic import context

import state.agent_views  # noqa: F401  (registers tables)
import state.answers  # noqa: F401
import state.audience  # noqa: F401
import state.dedupe  # noqa: F401
import state.leases  # noqa: F401
import state.legacy  # noqa: F401
import state.placeholders  # noqa: F401
import state.proposals  # noqa: F401
import state.ratelimit  # noqa: F401
import state.sync_requests  # noqa: F401
import state.sync_status  # noqa: F401
import state.threads  # noqa: F401
import state.tokens  # noqa: F401
from state.schema import Base

connection = context.config.attributes["connection"]
# SQLite cannot ALTER most things in place: batch mode copies the table, as Alembic recommends.
context.configure(
    connection=connection,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
)
with context.begin_transaction():
    context.run_migrations()
