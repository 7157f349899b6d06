"""The Postgres index's full-text column reads the words LanceDB's full-text index reads.

Postgres' parser keeps `HTTP/2`, `client.get`, `example.org` and `/localhost` as one lexeme each,
while a question's terms are single words (`HTTP`, `2`): "how do I turn on HTTP/2?" never matched
the page that says "HTTP/2" everywhere (formats-mkdocs on pgvector). The tsvector is now made from
the text with its ASCII punctuation turned into spaces, as the query's terms are
(rag/store/postgres.py). Only where 0008 made the index tables.

Revision ID: 0010
Revises: 0009
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: Union[str, Sequence[str], None] = "0009"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

CHUNKS = "docsbot_index_chunks"


def _search_tsv(words: str) -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql" or not bind.execute(sa.text("SELECT to_regclass(:t)"), {"t": CHUNKS}).scalar():
        return
    op.execute(f"ALTER TABLE {CHUNKS} DROP COLUMN search_tsv")  # its GIN index with it
    op.execute(f"ALTER TABLE {CHUNKS} ADD COLUMN search_tsv tsvector "
               f"GENERATED ALWAYS AS (to_tsvector('english', {words})) STORED")
    op.execute(f"CREATE INDEX ix_docsbot_index_chunks_search_tsv ON {CHUNKS} USING gin (search_tsv)")


def upgrade() -> None:
    _search_tsv("regexp_replace(coalesce(search_text, ''), '[[:punct:]]+', ' ', 'g')")


def downgrade() -> None:
    _search_tsv("coalesce(search_text, '')")
