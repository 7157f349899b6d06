"""Shared state between processes (answers, feedback, dedupe, rate limits, sync requests, leases).

SQLAlchemy 2 (async) over SQLite by default or Postgres in production; the schema is managed by
Alembic migrations shipped in `state/migrations`."""
