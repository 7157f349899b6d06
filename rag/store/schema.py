"""What the index's tables hold and how their Arrow data becomes Python: the chunk row's columns,
the metadata and vector layouts, SQL literals, and search results as hits."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pyarrow as pa

CHUNKS, VECTORS, META = "chunks", "vectors", "meta"
ROW_FIELDS = [
    ("chunk_id", pa.string()),
    ("doc_path", pa.string()),
    ("ordinal", pa.int32()),
    ("title", pa.string()),
    ("section", pa.string()),
    ("anchor", pa.string()),
    ("version", pa.string()),
    ("commit", pa.string()),
    ("commit_date", pa.string()),
    ("url", pa.string()),
    # The section's page on the published docs site (rag/site.py); "" without DOCSBOT_SITE_URL.
    # Added after the first release: an index written before has no such column until its next
    # write adds it (tables.py: Tables.write), and reads fill it in as "" (ROW_DEFAULTS).
    ("page_url", pa.string()),
    ("access", pa.string()),
    ("access_rank", pa.int8()),
    ("area", pa.string()),
    # The files the document pulled in (snippets, partials, include::), one per line: a change to
    # one re-reads the documents that include it. Added with page_url (see there).
    ("includes", pa.string()),
    # The document's language ("" = the docs' default) and the page it is a variant of (its path
    # without the language marker, rag/formats/language.py): retrieval keeps one language of a
    # page (rag/retrieval.py). Added after includes, read from older indexes as "" (see page_url).
    ("language", pa.string()),
    ("page", pa.string()),
    # Freshness from the front matter (rag/freshness.py): "" (current), "deprecated" or "draft"; the
    # last review as an ISO date ("" when none); the review period in days (0: DOCSBOT_REVIEW_DAYS).
    # Added after page, read from older indexes as "" / 0 (see page_url).
    ("status", pa.string()),
    ("reviewed", pa.string()),
    ("review_days", pa.int32()),
    ("text", pa.string()),
    ("search_text", pa.string()),
    ("text_hash", pa.string()),
    ("doc_hash", pa.string()),
]
# The columns full-text search ranks by (Index.text's `column`), each with how Postgres indexes
# it: a tsvector column generated as to_tsvector('english', coalesce(<column>, '')) with a GIN
# index, both made by a migration (0008 for search_text). LanceDB builds an FTS index on each
# (tables.py: index_chunks, also for an existing index at its next maintain()). Another column
# to search is one line here and, on Postgres, its migration.
TEXT_SEARCHED: dict[str, str] = {"search_text": "search_tsv"}
# Searches return only what ranking needs; the final few chunks are then read whole (rows()).
SEARCH_COLUMNS = ["chunk_id", "doc_path", "access_rank", "vector"]
ROW_COLUMNS = [name for name, _ in ROW_FIELDS if name != "search_text"]
# Columns an older index may lack, with what a read gives in their place.
ROW_DEFAULTS: dict[str, Any] = {"page_url": "", "includes": "", "language": "", "page": "", "status": "",
                                "reviewed": "", "review_days": 0}


def with_defaults(row: dict[str, Any]) -> dict[str, Any]:
    """The row with ROW_DEFAULTS in the columns an older index lacks (or holds null in)."""
    for name, value in ROW_DEFAULTS.items():
        if row.get(name) is None:  # not in an older index, or null in its rows from before the migration
            row[name] = value
    return row


@dataclass
class Hit:
    row: dict[str, Any]
    vector: np.ndarray
    score: float  # cosine similarity for dense hits, BM25 score for text hits


def chunk_schema(dim: int) -> pa.Schema:
    return pa.schema([*ROW_FIELDS, ("vector", pa.list_(pa.float32(), dim))])


def meta_table(values: dict[str, Any]) -> pa.Table:
    return pa.table({"key": list(values), "value": [json.dumps(v) for v in values.values()]})


def vector_array(vectors: np.ndarray) -> pa.FixedSizeListArray:
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    return pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), vectors.shape[1])


def vector_matrix(table: pa.Table) -> np.ndarray:
    """The table's `vector` column as one (rows × dim) array, in one copy (not row by row)."""
    dim = table.schema.field("vector").type.list_size
    return table["vector"].combine_chunks().flatten().to_numpy().reshape(table.num_rows, dim)


def storable(text: str) -> bool:
    """Whether `text` can be a value of the index's text columns: no NUL (PostgreSQL's text type
    refuses one, and no file name holds one) and nothing UTF-8 cannot encode (a lone surrogate).
    A path that is not is no document's: it has no rows, on every store."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def sql_list(values: Iterable[str]) -> str:
    return ", ".join("'" + v.replace("'", "''") + "'" for v in values)


def access_filter(max_rank: int, within: frozenset[str] | None = None) -> str:
    """The SQL filter of a reader at `max_rank`, narrowed to the documents `within` when given."""
    where = f"access_rank <= {int(max_rank)}"
    return f"{where} AND doc_path IN ({sql_list(sorted(within))})" if within else where


_FTS_TOKEN = re.compile(r"[\w][\w.-]*")


def _query_words(text: str) -> str:
    """Words only: the FTS parser must never see user punctuation as query syntax."""
    return " ".join(_FTS_TOKEN.findall(text))


def text_search_words(query: str, column: str, within: frozenset[str] | None) -> str:
    """What a full-text search of `column` looks for: the query's words, "" when there is nothing
    to search (no words, or an empty `within`). ValueError, naming TEXT_SEARCHED, unless
    full-text search indexes `column`: unchecked, LanceDB would scan it flat with another
    tokenizer and Postgres fail on a missing tsvector."""
    if column not in TEXT_SEARCHED:
        raise ValueError(f"no full-text index on chunk column {column!r} (rag/store/schema.py: TEXT_SEARCHED)")
    return "" if within is not None and not within else _query_words(query)


def to_hits(result: pa.Table, score_column: str, exact_for: np.ndarray | None = None) -> list[Hit]:
    """Hits from a search result.

    With `exact_for` (the query vector of a dense search) each hit is scored by its exact cosine
    and the hits are ordered by it: the IVF_SQ index ranks by quantised distances, which are far
    off on real embeddings (awsdocs-dev: 0.17 where the vectors give 0.59, some below 0), and the
    answerability gate reads these scores."""
    vectors = vector_matrix(result)
    rows = result.select([c for c in result.column_names if c not in ("vector", score_column)]).to_pylist()
    if exact_for is None:
        scores = result[score_column].to_pylist()
        return [Hit(row, vector, float(score)) for row, vector, score in zip(rows, vectors, scores)]
    scores = vectors @ np.asarray(exact_for, dtype=np.float32)
    return [Hit(rows[i], vectors[i], float(scores[i])) for i in np.argsort(-scores, kind="stable")]
