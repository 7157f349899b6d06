"""The index in Postgres (rag/store/postgres.py, DOCSBOT_INDEX_URL=postgresql://…): chunk rows with
their vectors (pgvector) and a full-text column, the embedding cache, and the index's metadata.

Created only on a PostgreSQL server where the `vector` extension is installed or can be: a state
database on SQLite, or on a Postgres without pgvector, never holds the index, and this revision
leaves it as it was. The vector columns have no dimension (the embedding model picks it); the
index builds its HNSW index on them for the dimension it holds (`Index.maintain`).

Revision ID: 0008
Revises: 0007
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0008"
down_revision: Union[str, Sequence[str], None] = "0007"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

TEXT_COLUMNS = ("doc_path", "title", "section", "anchor", "version", "commit", "commit_date", "url", "page_url",
                "access", "area", "includes", "language", "page", "status", "reviewed", "text", "search_text",
                "text_hash", "doc_hash")
TABLES = ("docsbot_index_chunks", "docsbot_index_vectors", "docsbot_index_meta")


def _pgvector(bind: sa.Connection) -> bool:
    """The vector extension is there, or was created now (a savepoint: lacking the privilege to
    create it leaves the transaction usable)."""
    if bind.execute(sa.text("SELECT 1 FROM pg_extension WHERE extname = 'vector'")).scalar():
        return True
    if not bind.execute(sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).scalar():
        return False
    try:
        with bind.begin_nested():
            bind.execute(sa.text("CREATE EXTENSION IF NOT EXISTS vector"))
    except sa.exc.DBAPIError:
        return False
    return True


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql" or not _pgvector(bind):
        return
    text_columns = ", ".join(f'"{name}" text' for name in TEXT_COLUMNS)
    op.execute(
        f"CREATE TABLE docsbot_index_chunks (chunk_id text PRIMARY KEY, ordinal integer, {text_columns}, "
        "access_rank smallint NOT NULL, review_days integer, vector vector NOT NULL, "
        "search_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', coalesce(search_text, ''))) STORED)"
    )
    op.execute("CREATE INDEX ix_docsbot_index_chunks_doc_path ON docsbot_index_chunks (doc_path)")
    op.execute("CREATE INDEX ix_docsbot_index_chunks_access_rank ON docsbot_index_chunks (access_rank)")
    op.execute("CREATE INDEX ix_docsbot_index_chunks_search_tsv ON docsbot_index_chunks USING gin (search_tsv)")
    op.execute("CREATE TABLE docsbot_index_vectors (text_hash text PRIMARY KEY, vector vector NOT NULL)")
    op.execute("CREATE TABLE docsbot_index_meta (key text PRIMARY KEY, value text NOT NULL)")


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TABLE IF EXISTS {table}")
