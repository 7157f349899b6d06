"""The Postgres index's text list without statistics on every search (rag/store/postgres.py).

BM25 needs each term's document count, the rows' mean length and, to be fast, the rows where a
term weighs most. Kept here, per index version: triggers on the chunks table keep them in the
transaction that writes the rows, so a reader sees the statistics of the rows it sees.

- docsbot_index_text_stats: the row count and their words (stop words left out), one row;
- docsbot_index_terms: per lexeme and access rank, the rows that hold it (`docs`), how many of
  them are listed in the postings (`listed`) and `floor`: no row left out of the list weighs more;
- docsbot_index_postings: per lexeme and access rank, the rows where it weighs most, each with
  its BM25 term weight without idf, tf·(k1+1) / (tf + k1·(1 − b + b·length / mean)), the mean as
  it was when the row was written. A list holds at least LIST_ROWS rows (all, while the term is
  in fewer) and is cut back to LIST_ROWS once it passes twice that.

Only where 0008 made the index tables; existing rows are written again to fill them.

Revision ID: 0014
Revises: 0013
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0014"
down_revision: Union[str, Sequence[str], None] = "0013"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None

CHUNKS = "docsbot_index_chunks"
LIST_ROWS = 256
K1, B = 1.2, 0.75  # BM25's, as LanceDB's (rag/store/postgres.py)

WORDS = """
CREATE FUNCTION docsbot_index_words(t tsvector) RETURNS integer LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS
$$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest(t) $$
"""

# The rows in `new_rows` (a transition table) counted, and listed where they weigh most. `r` is
# materialised: inlined, each row's length was recounted (its tsvector read again) for every one
# of its lexemes, 12 of the 20 s a write of 5,000 awsdocs chunks took.
ADDED = f"""
UPDATE docsbot_index_text_stats s SET rows = s.rows + n.c, words = s.words + n.w
  FROM (SELECT count(*) AS c, coalesce(sum(docsbot_index_words(search_tsv)), 0) AS w FROM new_rows) n;
SELECT s.words::float8 / greatest(s.rows, 1) INTO mean FROM docsbot_index_text_stats s;
WITH r AS MATERIALIZED (SELECT chunk_id, access_rank, search_tsv, docsbot_index_words(search_tsv)::float8 AS len
                        FROM new_rows),
p AS MATERIALIZED (
  SELECT u.lexeme, r.access_rank, r.chunk_id, w.impact,
         row_number() OVER (PARTITION BY u.lexeme, r.access_rank ORDER BY w.impact DESC) AS n
  FROM r, unnest(r.search_tsv) u,
       LATERAL (SELECT coalesce(array_length(u.positions, 1), 1) AS tf) f,
       LATERAL (SELECT f.tf::float8 * {K1 + 1} / (f.tf + {K1} * ({1 - B} + {B} * r.len / mean)) AS impact) w),
kept AS MATERIALIZED (
  SELECT p.* FROM p LEFT JOIN docsbot_index_terms t USING (lexeme, access_rank)
  WHERE p.n <= {LIST_ROWS} AND p.impact > coalesce(t.floor, 0)),
listed AS (INSERT INTO docsbot_index_postings (lexeme, access_rank, impact, chunk_id)
           SELECT lexeme, access_rank, impact, chunk_id FROM kept),
per AS (SELECT lexeme, access_rank, count(*) AS docs, coalesce(max(impact) FILTER (WHERE n > {LIST_ROWS}), 0) AS cut
        FROM p GROUP BY 1, 2),
kc AS (SELECT lexeme, access_rank, count(*) AS c FROM kept GROUP BY 1, 2)
INSERT INTO docsbot_index_terms (lexeme, access_rank, docs, listed, floor)
SELECT per.lexeme, per.access_rank, per.docs, coalesce(kc.c, 0), per.cut
  FROM per LEFT JOIN kc USING (lexeme, access_rank)
ON CONFLICT (lexeme, access_rank) DO UPDATE SET docs = docsbot_index_terms.docs + excluded.docs,
  listed = docsbot_index_terms.listed + excluded.listed, floor = greatest(docsbot_index_terms.floor, excluded.floor);
WITH over AS (SELECT lexeme, access_rank FROM docsbot_index_terms WHERE listed > {2 * LIST_ROWS}),
ranked AS (SELECT p.ctid AS at, row_number() OVER (PARTITION BY p.lexeme, p.access_rank ORDER BY p.impact DESC) AS n
           FROM docsbot_index_postings p JOIN over USING (lexeme, access_rank)),
gone AS (DELETE FROM docsbot_index_postings p USING ranked WHERE p.ctid = ranked.at AND ranked.n > {LIST_ROWS}
         RETURNING p.lexeme, p.access_rank, p.impact)
UPDATE docsbot_index_terms t SET listed = t.listed - g.c, floor = greatest(t.floor, g.top)
  FROM (SELECT lexeme, access_rank, count(*) AS c, max(impact) AS top FROM gone GROUP BY 1, 2) g
  WHERE t.lexeme = g.lexeme AND t.access_rank = g.access_rank;
"""

# The rows in `old_rows` no longer counted nor listed.
REMOVED = """
UPDATE docsbot_index_text_stats s SET rows = s.rows - n.c, words = s.words - n.w
  FROM (SELECT count(*) AS c, coalesce(sum(docsbot_index_words(search_tsv)), 0) AS w FROM old_rows) n;
WITH gone AS (DELETE FROM docsbot_index_postings p USING old_rows o WHERE p.chunk_id = o.chunk_id
              RETURNING p.lexeme, p.access_rank),
gc AS (SELECT lexeme, access_rank, count(*) AS c FROM gone GROUP BY 1, 2),
per AS (SELECT u.lexeme, o.access_rank, count(*) AS docs FROM old_rows o, unnest(o.search_tsv) u GROUP BY 1, 2)
UPDATE docsbot_index_terms t SET docs = t.docs - per.docs, listed = t.listed - coalesce(gc.c, 0)
  FROM per LEFT JOIN gc USING (lexeme, access_rank)
  WHERE t.lexeme = per.lexeme AND t.access_rank = per.access_rank;
"""


def _function(name: str, body: str) -> str:
    return (f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$\n"
            f"DECLARE mean float8;\nBEGIN\n{body}\nRETURN NULL;\nEND $$")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql" or not bind.execute(sa.text("SELECT to_regclass(:t)"), {"t": CHUNKS}).scalar():
        return
    op.execute("CREATE TABLE docsbot_index_text_stats (id integer PRIMARY KEY CHECK (id = 1), rows bigint NOT NULL, "
               "words bigint NOT NULL)")
    op.execute("INSERT INTO docsbot_index_text_stats VALUES (1, 0, 0)")
    op.execute("CREATE TABLE docsbot_index_terms (lexeme text, access_rank smallint, docs bigint NOT NULL, "
               "listed integer NOT NULL, floor real NOT NULL, PRIMARY KEY (lexeme, access_rank))")
    op.execute(f"CREATE INDEX ix_docsbot_index_terms_over ON docsbot_index_terms (lexeme) "
               f"WHERE listed > {2 * LIST_ROWS}")
    op.execute("CREATE TABLE docsbot_index_postings (lexeme text NOT NULL, access_rank smallint NOT NULL, "
               "impact real NOT NULL, chunk_id text NOT NULL)")
    op.execute("CREATE INDEX ix_docsbot_index_postings_list ON docsbot_index_postings "
               "(lexeme, access_rank, impact DESC) INCLUDE (chunk_id)")
    op.execute("CREATE INDEX ix_docsbot_index_postings_chunk ON docsbot_index_postings (chunk_id)")
    op.execute(WORDS)
    op.execute(_function("docsbot_index_text_inserted", ADDED))
    op.execute(_function("docsbot_index_text_deleted", REMOVED))
    op.execute(_function("docsbot_index_text_updated", REMOVED + ADDED))
    op.execute(_function("docsbot_index_text_truncated", "TRUNCATE docsbot_index_postings, docsbot_index_terms;\n"
                                                         "UPDATE docsbot_index_text_stats SET rows = 0, words = 0;"))
    columns = bind.execute(sa.text("SELECT string_agg(quote_ident(column_name), ', ' ORDER BY ordinal_position) "
                                   "FROM information_schema.columns WHERE table_name = :t AND is_generated = 'NEVER'"),
                           {"t": CHUNKS}).scalar()
    op.execute(f"CREATE TEMPORARY TABLE index_rows ON COMMIT DROP AS SELECT {columns} FROM {CHUNKS}")
    op.execute(f"DELETE FROM {CHUNKS}")  # written again below, through the triggers
    op.execute(f"CREATE TRIGGER docsbot_index_text_inserted AFTER INSERT ON {CHUNKS} REFERENCING NEW TABLE AS new_rows "
               "FOR EACH STATEMENT EXECUTE FUNCTION docsbot_index_text_inserted()")
    op.execute(f"CREATE TRIGGER docsbot_index_text_deleted AFTER DELETE ON {CHUNKS} REFERENCING OLD TABLE AS old_rows "
               "FOR EACH STATEMENT EXECUTE FUNCTION docsbot_index_text_deleted()")
    op.execute(f"CREATE TRIGGER docsbot_index_text_updated AFTER UPDATE ON {CHUNKS} "
               "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
               "FOR EACH STATEMENT EXECUTE FUNCTION docsbot_index_text_updated()")
    op.execute(f"CREATE TRIGGER docsbot_index_text_truncated AFTER TRUNCATE ON {CHUNKS} "
               "FOR EACH STATEMENT EXECUTE FUNCTION docsbot_index_text_truncated()")
    op.execute(f"INSERT INTO {CHUNKS} ({columns}) SELECT {columns} FROM index_rows")  # counted and listed


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql" or not bind.execute(sa.text("SELECT to_regclass(:t)"), {"t": CHUNKS}).scalar():
        return
    for event in ("inserted", "deleted", "updated", "truncated"):
        op.execute(f"DROP TRIGGER IF EXISTS docsbot_index_text_{event} ON {CHUNKS}")
        op.execute(f"DROP FUNCTION IF EXISTS docsbot_index_text_{event}()")
    op.execute("DROP FUNCTION IF EXISTS docsbot_index_words(tsvector)")
    for table in ("docsbot_index_postings", "docsbot_index_terms", "docsbot_index_text_stats"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
