"""The index in Postgres with pgvector (DOCSBOT_INDEX_URL=postgresql://…): for teams that keep
docsbot's state in Postgres already. Tables: migration 0008; writes, metadata, the vector cache
and maintenance: pg_tables.py. This module: searches and reads.

- Dense search: cosine distance through the HNSW index, with the access filter (and a channel's
  scope) in the WHERE clause of the same query. pgvector 0.8's iterative scans
  (`hnsw.iterative_scan = relaxed_order`) keep walking the graph until `limit` rows pass the
  filter, so a filter that passes few rows still gets its top rows, not what is left of an
  unfiltered top-k. The rows found are scored by their exact cosine and ordered by it.
- Text search: Postgres full-text search (`english` configuration: stemming, stop words) on the
  column's tsvector (schema.TEXT_SEARCHED: search_text's is search_tsv), made from its words with
  punctuation read as a space (migration 0010: `HTTP/2` is `http` and `2`, as in a question and in
  LanceDB's index), the terms OR-ed as in LanceDB's full-text search, scored by BM25 as LanceDB
  scores (k1 1.2, b 0.75, idf from one indexed count per term): the rows that hold a term are
  found and pre-ranked through the GIN index (ts_rank_cd weighted by idf), the best of them
  scored from the term counts in their tsvectors.
Searches run the (blocking) driver in a worker thread; the connections are pooled.
"""
from __future__ import annotations

import asyncio
import math
import re
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import sqlalchemy as sa

from rag.config import IndexConfig
from rag.store.pg_tables import CHUNKS, COLUMNS, PgTables, database_errors, vector_literal
from rag.store.protocol import Index
from rag.store.schema import (ROW_COLUMNS, TEXT_SEARCHED, Hit, chunk_schema, storable, text_search_words,
                              with_defaults)

# Candidates the HNSW graph search keeps (pgvector's default is 40): at 64, recall@16 was 0.85-0.91 at
# 100k rows with the awsdocs questions (`eval bench --index-url`, docs/performance.md).
EF_SEARCH = 200
_WORD = re.compile(r"[^\W_]+")  # a query term: letters and digits, the words the tsvector holds (migration 0010)
SEARCHED = "chunk_id, doc_path, access_rank, vector::real[] AS vector"
WHOLE_ROW = ", ".join(f'"{name}"' for name in ROW_COLUMNS)


def _readers(max_rank: int, within: frozenset[str] | None) -> tuple[str, dict[str, Any]]:
    """The WHERE clause of a reader at `max_rank` (within these documents, when given)."""
    where = "access_rank <= :max_rank"
    params: dict[str, Any] = {"max_rank": int(max_rank)}
    if within is not None:
        where, params = f"{where} AND doc_path = ANY(:within)", params | {"within": sorted(within)}
    return where, params


def _columns(columns: Iterable[str]) -> str:
    unknown = set(columns) - set(COLUMNS)
    if unknown:
        raise ValueError(f"no such chunk column: {', '.join(sorted(unknown))}")
    return "".join(f', "{name}"' for name in columns)


class PgIndex(PgTables):
    _lexemes_at: tuple[int, float] = (-1, 1.0)  # the row count the mean length was read at, and it

    # -- searches ------------------------------------------------------------------------------
    async def dense(self, vector: np.ndarray, max_rank: int, limit: int,
                    within: frozenset[str] | None = None) -> list[Hit]:
        if within is not None and not within:
            return []
        return await asyncio.to_thread(self._dense, np.asarray(vector, dtype=np.float32), max_rank, limit, within)

    @database_errors
    def _dense(self, vector: np.ndarray, max_rank: int, limit: int, within: frozenset[str] | None) -> list[Hit]:
        where, params = _readers(max_rank, within)
        dim = len(vector)
        query = sa.text(f"SELECT {SEARCHED} FROM {CHUNKS} WHERE {where} "
                        f"ORDER BY vector::vector({dim}) <=> CAST(:query AS vector({dim})) LIMIT :limit")
        with self._engine.connect() as c, c.begin():
            c.exec_driver_sql("SET LOCAL hnsw.iterative_scan = relaxed_order")
            c.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(limit))}")
            rows = c.execute(query, params | {"query": vector_literal(vector), "limit": int(limit)}).mappings().all()
        if not rows:
            self._existing()
        vectors = np.asarray([row["vector"] for row in rows], dtype=np.float32).reshape(len(rows), dim)
        scores = vectors @ vector
        hits = [Hit({k: rows[i][k] for k in ("chunk_id", "doc_path", "access_rank")}, vectors[i], float(scores[i]))
                for i in np.argsort(-scores, kind="stable")]
        return [h for h in hits if h.row["access_rank"] <= max_rank]  # the filter's last guard

    async def text(self, query: str, max_rank: int, limit: int, within: frozenset[str] | None = None,
                   column: str = "search_text") -> list[Hit]:
        words = text_search_words(query, column, within)
        if not words:
            return []
        return await asyncio.to_thread(self._text, words, max_rank, limit, within, column)

    @database_errors
    def _text(self, words: str, max_rank: int, limit: int, within: frozenset[str] | None, column: str) -> list[Hit]:
        """BM25 over the column's tsvector, as LanceDB ranks: the rows that hold a term, first by
        each term's ts_rank_cd weighted by its inverse document frequency (through the GIN index),
        then the best of them scored by BM25 from their lexeme counts. ts_rank_cd alone ranks a
        short page that names a term once over the section that is about it (formats-mkdocs)."""
        where, params = _readers(max_rank, within)
        tsv = TEXT_SEARCHED[column]
        terms = {f"t{n}": term for n, term in enumerate(sorted({w.lower() for w in _WORD.findall(words)}))}
        per_term = ", ".join(f"(SELECT count(*) FROM {CHUNKS} WHERE {tsv} @@ plainto_tsquery('english', :{k})), "
                             f"plainto_tsquery('english', :{k})::text" for k in terms)  # through the GIN index
        with self._reading() as c:
            total, *found = c.execute(sa.text(f"SELECT (SELECT count(*) FROM {CHUNKS}), {per_term}"), terms).one()
            weights = {k: (term, _lexeme(lexeme), math.log(1 + (total - n + 0.5) / (n + 0.5)))
                       for (k, term), n, lexeme in zip(terms.items(), found[::2], found[1::2]) if n}
            if not weights:  # a stop word's query matches nothing
                return []
            score = " + ".join(f":w_{k} * ts_rank_cd({tsv}, plainto_tsquery('english', :{k}), 1)" for k in weights)
            matched = " || ".join(f"plainto_tsquery('english', :{k})" for k in weights)
            # Ranked first, then the columns read for the best rows only: in one SELECT Postgres
            # casts every matching row's vector and tsvector before it sorts (72 against 139 ms).
            query = sa.text(f"WITH best AS (SELECT chunk_id, {score} AS score FROM {CHUNKS} "
                            f"WHERE {tsv} @@ ({matched}) AND {where} ORDER BY score DESC, chunk_id LIMIT :limit) "
                            f'SELECT {SEARCHED}, "{column}", {tsv}::text AS lexemes '
                            f"FROM best JOIN {CHUNKS} USING (chunk_id)")
            bound = {k: term for k, (term, _, _) in weights.items()} | {f"w_{k}": w for k, (_, _, w) in weights.items()}
            rows = c.execute(query, params | bound | {"limit": max(int(limit) * 4, 64)}).mappings().all()
            mean = self._mean_lexemes(c, tsv, total)
        idf = {lexeme: w for _, lexeme, w in weights.values() if lexeme}
        scored = sorted(((bm25(row["lexemes"], idf, mean), row) for row in rows),
                        key=lambda pair: (-pair[0], pair[1]["chunk_id"]))
        return [Hit({k: row[k] for k in ("chunk_id", "doc_path", "access_rank", column)},
                    np.asarray(row["vector"], dtype=np.float32), score) for score, row in scored[:limit]]

    def _mean_lexemes(self, c: sa.Connection, tsv: str, total: int) -> float:
        """The rows' mean count of words, stop words left out (BM25's average length), read again
        when the row count changed since it was last read: one scan, not one per search."""
        if self._lexemes_at[0] != total:
            words = f"(SELECT sum(coalesce(array_length(w.positions, 1), 1)) FROM unnest({tsv}) AS w)"
            mean = c.execute(sa.text(f"SELECT avg({words}) FROM {CHUNKS}")).scalar()
            self._lexemes_at = (total, float(mean or 1.0))
        return self._lexemes_at[1]

    # -- rows ------------------------------------------------------------------------------------
    async def rows(self, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        if not chunk_ids:
            return {}
        found = await asyncio.to_thread(self._select, f"SELECT {WHOLE_ROW} FROM {CHUNKS} WHERE chunk_id = ANY(:ids)",
                                        {"ids": list(chunk_ids)})
        return {row["chunk_id"]: with_defaults(row) for row in found}

    async def doc_rows(self, doc_path: str, max_rank: int) -> list[dict[str, Any]]:
        if not storable(doc_path):  # the query would fail: PostgreSQL's text holds no NUL
            return []
        query = (f"SELECT {WHOLE_ROW}, vector::real[] AS vector FROM {CHUNKS} "
                 "WHERE doc_path = :path AND access_rank <= :max_rank ORDER BY ordinal")
        found = await asyncio.to_thread(self._select, query, {"path": doc_path, "max_rank": int(max_rank)})
        return [with_defaults(row) for row in found]

    async def documents(self) -> tuple[str, ...]:
        return tuple(sorted(row["doc_path"] for row in await self._firsts()))

    async def languages(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in await self._firsts():
            counts[row["language"] or ""] = counts.get(row["language"] or "", 0) + 1
        return counts

    async def _firsts(self) -> list[dict[str, Any]]:
        """The first chunk of each document: one row per document."""
        return await asyncio.to_thread(self._select, f"SELECT doc_path, language FROM {CHUNKS} WHERE ordinal = 0", {})

    async def labels(self, chunk_ids: list[str]) -> dict[str, tuple[str, str]]:
        if not chunk_ids:
            return {}
        found = await asyncio.to_thread(
            self._select, f"SELECT chunk_id, doc_path, page, language FROM {CHUNKS} WHERE chunk_id = ANY(:ids)",
            {"ids": list(chunk_ids)})
        return {row["chunk_id"]: (row["page"] or row["doc_path"], row["language"] or "") for row in found}

    @database_errors
    def _select(self, query: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        with self._reading() as c:
            return [dict(row) for row in c.execute(sa.text(query), params).mappings()]

    # -- per-document and per-chunk columns ----------------------------------------------------------
    def doc_hashes(self) -> dict[str, str]:
        return {path: values[0] for path, values in self.doc_columns("doc_hash").items()}

    def doc_columns(self, *columns: str) -> dict[str, tuple]:
        if not self._tables_there():
            return {}
        rows = self._select(f"SELECT DISTINCT ON (doc_path) doc_path{_columns(columns)} FROM {CHUNKS} "
                            "ORDER BY doc_path, ordinal", {})
        return {row["doc_path"]: tuple(row[c] for c in columns) for row in map(with_defaults, rows)}

    def chunk_columns(self, doc_paths: Iterable[str], *columns: str) -> list[dict[str, Any]]:
        paths = sorted(set(doc_paths))
        if not paths or not self._tables_there():
            return []
        rows = self._select(f"SELECT doc_path{_columns(columns)} FROM {CHUNKS} WHERE doc_path = ANY(:paths)",
                            {"paths": paths})
        return [{c: row[c] for c in ("doc_path", *columns)} for row in map(with_defaults, rows)]

    def includers(self, paths: Iterable[str]) -> list[str]:
        changed = set(paths)
        if not changed or not self._tables_there():
            return []
        rows = self._select(f"SELECT DISTINCT doc_path, includes FROM {CHUNKS} WHERE includes <> ''", {})
        return sorted({row["doc_path"] for row in rows if changed & set(row["includes"].split("\n"))})

    def chunk_vectors(self) -> tuple[list[str], np.ndarray]:
        self._existing()
        rows = self._select(f"SELECT chunk_id, vector::real[] AS vector FROM {CHUNKS} ORDER BY chunk_id", {})
        return [row["chunk_id"] for row in rows], np.asarray([row["vector"] for row in rows], dtype=np.float32)

    def all_rows(self) -> pa.Table:
        self._existing()
        rows = self._select(f'SELECT {WHOLE_ROW}, "search_text", vector::real[] AS vector FROM {CHUNKS} '
                            "ORDER BY chunk_id", {})
        dim = len(rows[0]["vector"]) if rows else 0
        return pa.Table.from_pylist(rows, schema=chunk_schema(dim))


def open_postgres(config: IndexConfig, read_only: bool = False) -> Index:
    """The index in the database at config.location (every process reads it itself)."""
    return PgIndex(config.location)


_LEXEMES = re.compile(r"'((?:[^']|'')+)':([0-9A-D,]+)")  # a tsvector as text: 'lexeme':1,7 'other':3
K1, B = 1.2, 0.75  # BM25's usual constants, LanceDB's too


def _lexeme(query: str) -> str:
    """The lexeme of a one-word tsquery as text ("'proxi'"); "" for a stop word."""
    return query.strip().strip("'").replace("''", "'")


def bm25(lexemes: str, idf: dict[str, float], mean_length: float) -> float:
    """A row's BM25 score from its tsvector's text: each query lexeme's count of positions (its
    term frequency), the row's count of words (all lexemes' positions) as its length."""
    counts = {m.group(1).replace("''", "'"): m.group(2).count(",") + 1 for m in _LEXEMES.finditer(lexemes)}
    norm = K1 * (1 - B + B * sum(counts.values()) / mean_length)
    return sum(w * counts[lex] * (K1 + 1) / (counts[lex] + norm) for lex, w in idf.items() if lex in counts)
