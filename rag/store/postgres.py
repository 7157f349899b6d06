"""The index in Postgres with pgvector (DOCSBOT_INDEX_URL=postgresql://…): for teams that keep
docsbot's state in Postgres already. Tables: migration 0008; writes, metadata, the vector cache
and maintenance: pg_tables.py. This module: searches and reads.

- Dense search: cosine distance through the HNSW index, with the access filter (and a channel's
  scope) in the WHERE clause of the same query; readers of a level that passes few rows search
  a partial HNSW graph of those rows (pg_tables.maintain). pgvector 0.8's iterative scans
  (`hnsw.iterative_scan = relaxed_order`) keep walking the graph until `limit` rows pass the
  filter, so a filter that passes few rows still gets its top rows, not what is left of an
  unfiltered top-k. The rows found are scored by their exact cosine and ordered by it.
- Text search: Postgres full-text search (`english` configuration: stemming, stop words) on the
  column's tsvector (schema.TEXT_SEARCHED: search_text's is search_tsv), made from its words with
  punctuation read as a space (migration 0010: `HTTP/2` is `http` and `2`, as in a question and in
  LanceDB's index), the terms OR-ed as in LanceDB's full-text search, scored by BM25 as LanceDB
  scores (k1 1.2, b 0.75, idf from each term's count of rows). The counts, the mean length and
  each term's postings where it weighs most are kept by the writes (migration 0014's triggers):
  a search reads a few hundred postings and scores the best rows exactly (Bm25), instead of
  counting and ranking every row that holds a term.
Searches run the (blocking) driver in a worker thread; the connections are pooled.
"""
from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import sqlalchemy as sa

from rag.config import IndexConfig
from rag.store.pg_indexes import POSTINGS
from rag.store.pg_tables import CHUNKS, COLUMNS, TERMS, TEXT_STATS, PgTables, database_errors, vector_literal
from rag.store.protocol import Index
from rag.store.schema import (ROW_COLUMNS, TEXT_SEARCHED, Hit, chunk_schema, storable, text_search_words,
                              with_defaults)

# Candidates the HNSW graph search keeps (pgvector's default is 40): at 64, recall@16 was 0.85-0.91 at
# 100k rows with the awsdocs questions (`eval bench --index-url`, docs/performance.md).
EF_SEARCH = 200
POOL_ROWS = 256  # rows scored exactly per text search: see _listed
_WORD = re.compile(r"[^\W_]+")  # a query term: letters and digits, the words the tsvector holds (migration 0010)
SEARCHED = "chunk_id, doc_path, access_rank, vector::real[] AS vector"
WHOLE_ROW = ", ".join(f'"{name}"' for name in ROW_COLUMNS)


def _readers(max_rank: int, within: frozenset[str] | None) -> tuple[str, dict[str, Any]]:
    """The WHERE clause of a reader at `max_rank` (within these documents, when given). The rank
    is a literal, not a parameter: the planner matches it to the reader's partial HNSW graph
    (pg_indexes.hnsw_index), which a parameter's generic plan could not."""
    where = f"access_rank <= {int(max_rank)}"
    params: dict[str, Any] = {}
    if within is not None:
        where, params = f"{where} AND doc_path = ANY(:within)", params | {"within": sorted(within)}
    return where, params


def _columns(columns: Iterable[str]) -> str:
    unknown = set(columns) - set(COLUMNS)
    if unknown:
        raise ValueError(f"no such chunk column: {', '.join(sorted(unknown))}")
    return "".join(f', "{name}"' for name in columns)


class PgIndex(PgTables):
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
        """BM25 as LanceDB ranks, from the statistics the writes keep (migration 0014): the
        POOL_ROWS rows with the most weight in the query terms' postings (each term's rows where
        it weighs most), scored exactly from their tsvectors. Within some documents: every row
        of theirs that holds a term is scored."""
        tsv = TEXT_SEARCHED[column]
        with self._reading() as c:
            terms = c.execute(sa.text(
                "WITH q AS (SELECT DISTINCT lexeme FROM unnest(to_tsvector('english', :words))) "
                "SELECT q.lexeme, coalesce(sum(t.docs), 0)::bigint "
                f"FROM q LEFT JOIN {TERMS} t USING (lexeme) GROUP BY q.lexeme ORDER BY q.lexeme"),
                {"words": " ".join(_WORD.findall(words))}).all()
            total, length = c.execute(sa.text(f"SELECT rows, words FROM {TEXT_STATS}")).one()
            query = Bm25({lexeme: math.log(1 + (total - n + 0.5) / (n + 0.5)) for lexeme, n in terms if n},
                         length / max(total, 1))
            if not query.idf:  # stop words only, or terms no row holds
                return []
            if within is None:
                return self._listed(c, query, max_rank, limit, column, tsv)
            return self._scored(c, query, f"{tsv} @@ CAST(:any AS tsquery)", _readers(max_rank, within), limit,
                                column, tsv)

    def _listed(self, c: sa.Connection, query: Bm25, max_rank: int, limit: int, column: str, tsv: str) -> list[Hit]:
        """The top `limit` of the POOL_ROWS rows with the most listed weight, scored exactly."""
        lexemes = sorted(query.idf)
        ids = c.execute(sa.text(
            f"SELECT p.chunk_id FROM {POSTINGS} p JOIN "
            "unnest(CAST(:lexemes AS text[]), CAST(:idf AS float8[])) AS w(lexeme, idf) ON p.lexeme = w.lexeme "
            "WHERE p.access_rank <= :rank GROUP BY p.chunk_id ORDER BY sum(w.idf * p.impact) DESC, p.chunk_id "
            "LIMIT :pool"),
            {"lexemes": lexemes, "idf": [query.idf[x] for x in lexemes], "rank": int(max_rank),
             "pool": max(POOL_ROWS, int(limit))}).scalars().all()
        where, params = _readers(max_rank, None)
        return self._scored(c, query, "chunk_id = ANY(:ids)", (where, params | {"ids": ids}), limit, column, tsv)

    def _scored(self, c: sa.Connection, query: Bm25, rows: str, readers: tuple[str, dict[str, Any]], limit: int,
                column: str, tsv: str) -> list[Hit]:
        """The best `limit` of `rows` that pass `readers`, by BM25 from their tsvectors (each read
        once: its length and the query lexemes' counts of positions)."""
        where, params = readers
        lexemes = sorted(query.idf)
        counted = c.execute(sa.text(
            f"SELECT c.chunk_id, s.length, s.lexemes, s.counts FROM {CHUNKS} c CROSS JOIN LATERAL ("
            "SELECT sum(coalesce(array_length(u.positions, 1), 1)) AS length, "
            "array_agg(u.lexeme) FILTER (WHERE u.lexeme = ANY(:lexemes)) AS lexemes, "
            "array_agg(coalesce(array_length(u.positions, 1), 1)) FILTER (WHERE u.lexeme = ANY(:lexemes)) AS counts "
            f"FROM unnest(c.{tsv}) u) s WHERE {rows} AND {where}"),
            params | {"lexemes": lexemes, "any": " | ".join(map(_tsquery, lexemes))}).all()
        scored = sorted(((query.score(float(length), dict(zip(found or [], counts or []))), chunk_id)
                         for chunk_id, length, found, counts in counted), key=lambda pair: (-pair[0], pair[1]))
        best = dict((chunk_id, score) for score, chunk_id in scored[:limit] if score > 0)
        if not best:
            return []
        read = c.execute(sa.text(f'SELECT {SEARCHED}, "{column}" FROM {CHUNKS} WHERE chunk_id = ANY(:ids)'),
                         {"ids": list(best)}).mappings().all()
        found_rows = sorted(read, key=lambda row: (-best[row["chunk_id"]], row["chunk_id"]))
        return [Hit({k: row[k] for k in ("chunk_id", "doc_path", "access_rank", column)},
                    np.asarray(row["vector"], dtype=np.float32), best[row["chunk_id"]]) for row in found_rows]

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


K1, B = 1.2, 0.75  # BM25's usual constants, LanceDB's too (and migration 0014's)


def _tsquery(lexeme: str) -> str:
    """A one-lexeme tsquery's text: the lexeme quoted, as it is (not parsed nor stemmed again)."""
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


@dataclass(frozen=True)
class Bm25:
    """A query's terms as BM25 weighs them: each lexeme's idf, and the rows' mean length."""
    idf: dict[str, float]
    mean: float

    def score(self, length: float, counts: dict[str, int]) -> float:
        """A row's score from its count of words (all positions) and the query lexemes' counts."""
        norm = K1 * (1 - B + B * length / self.mean)
        return sum(w * counts[lex] * (K1 + 1) / (counts[lex] + norm) for lex, w in self.idf.items() if lex in counts)
