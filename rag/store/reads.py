"""The LanceDB index's reads that need no ranking: whole rows, one document's rows, the documents
and their languages, and the per-document and per-chunk columns a sync compares with the files."""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pyarrow as pa

from rag.store.errors import store_errors
from rag.store.schema import ROW_COLUMNS, access_filter, sql_list, storable, vector_matrix, with_defaults
from rag.store.tables import Tables


@store_errors
class Reads(Tables):
    async def rows(self, chunk_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Whole rows (without vectors) of the given chunks, by id."""
        if not chunk_ids:
            return {}
        table = await self._searchable()
        columns = await _row_columns(table)
        query = table.query().where(f"chunk_id IN ({sql_list(chunk_ids)})").select(columns)
        rows = (await query.limit(len(chunk_ids)).to_arrow()).to_pylist()
        return {row["chunk_id"]: with_defaults(row) for row in rows}

    async def doc_rows(self, doc_path: str, max_rank: int) -> list[dict[str, Any]]:
        """Whole rows (with their vectors) of one document's chunks at `max_rank` or below, in order."""
        if not storable(doc_path):
            return []
        table = await self._searchable()
        where = f"doc_path = {sql_list([doc_path])} AND {access_filter(max_rank)}"
        columns = await _row_columns(table)
        rows = (await table.query().where(where).select([*columns, "vector"]).to_arrow()).to_pylist()
        return sorted((with_defaults(row) for row in rows), key=lambda row: row["ordinal"])

    async def languages(self) -> dict[str, int]:
        """Documents per language ("" = the docs' default) in the index, counted again only when
        the chunks table's version changes; none in an index written before languages were kept."""
        return dict((await self._documents())[1])

    async def documents(self) -> tuple[str, ...]:
        """The indexed documents' paths, sorted, listed again only when the chunks table's version
        changes (a channel's scope is matched against them, rag/scope.py)."""
        return (await self._documents())[2]

    async def _documents(self) -> tuple[int, dict[str, int], tuple[str, ...]]:
        table = await self._searchable()
        version = await table.version()
        if self._census is None or self._census[0] != version:
            has_language = "language" in (await table.schema()).names
            columns = ["doc_path", "language"] if has_language else ["doc_path"]
            # The first chunk of each document: one row per document.
            firsts = (await table.query().where("ordinal = 0").select(columns).to_arrow()).to_pylist()
            counts: dict[str, int] = {}
            for row in firsts if has_language else []:
                counts[row["language"] or ""] = counts.get(row["language"] or "", 0) + 1
            self._census = (version, counts, tuple(sorted(row["doc_path"] for row in firsts)))
        return self._census

    async def labels(self, chunk_ids: list[str]) -> dict[str, tuple[str, str]]:
        """(page, language) of the given chunks that still exist, by id; a row written before
        pages were kept is its own page, in the default language."""
        table = await self._searchable()
        if not chunk_ids or not {"page", "language"} <= set((await table.schema()).names):
            return {}
        query = table.query().where(f"chunk_id IN ({sql_list(chunk_ids)})")
        rows = (await query.select(["chunk_id", "doc_path", "page", "language"]).limit(len(chunk_ids)).to_arrow())
        return {row["chunk_id"]: (row["page"] or row["doc_path"], row["language"] or "") for row in rows.to_pylist()}

    def doc_hashes(self) -> dict[str, str]:
        """doc_path -> content hash of what is indexed (for reconcile and status)."""
        if not self.exists():
            return {}
        table = self.chunks().search().select(["doc_path", "doc_hash"]).limit(None).to_arrow()
        return dict(zip(table["doc_path"].to_pylist(), table["doc_hash"].to_pylist()))

    def includers(self, paths: Iterable[str]) -> list[str]:
        """The documents that include any of `paths` (a snippet, a partial): what a sync re-reads
        when only the included file changed."""
        changed = set(paths)
        if not changed or not self.exists() or "includes" not in self.chunks().schema.names:
            return []
        table = self.chunks().search().where("includes != ''").select(["doc_path", "includes"]).limit(None).to_arrow()
        pairs = zip(table["doc_path"].to_pylist(), table["includes"].to_pylist())
        return sorted({doc for doc, included in pairs if changed & set(included.split("\n"))})

    def doc_columns(self, *columns: str) -> dict[str, tuple]:
        """doc_path -> values of per-document columns (doc_hash, commit, ...) for each indexed
        document: what a sync compares with the files at head. A column an older index lacks
        reads as ROW_DEFAULTS says, here and in chunk_columns."""
        if not self.exists():
            return {}
        chunks = self.chunks()
        rows = chunks.search().select(["doc_path", *_present(chunks, columns)]).limit(None).to_arrow().to_pylist()
        return {row["doc_path"]: tuple(row.get(c) for c in columns) for row in map(with_defaults, rows)}

    def chunk_columns(self, doc_paths: Iterable[str], *columns: str) -> list[dict[str, Any]]:
        """doc_path and the named columns of every chunk of these documents (none without an index)."""
        paths = sorted(set(doc_paths))
        if not paths or not self.exists():
            return []
        chunks = self.chunks()
        search = chunks.search().where(f"doc_path IN ({sql_list(paths)})")
        rows = search.select(["doc_path", *_present(chunks, columns)]).limit(None).to_arrow().to_pylist()
        return [{c: row.get(c) for c in ("doc_path", *columns)} for row in map(with_defaults, rows)]

    def chunk_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk's id and vector (one row of the matrix each), in table order."""
        table = self.chunks().search().select(["chunk_id", "vector"]).limit(None).to_arrow()
        return table["chunk_id"].to_pylist(), vector_matrix(table)

    def all_rows(self) -> pa.Table:
        """Every chunk's whole row with its vector, by chunk id (to compare two indexes)."""
        return self.chunks().to_arrow().sort_by("chunk_id")


async def _row_columns(table: Any) -> list[str]:
    """The whole-row columns this version of the table has (an older index lacks the newer ones)."""
    present = set((await table.schema()).names)
    return [name for name in ROW_COLUMNS if name in present]


def _present(table: Any, columns: Iterable[str]) -> list[str]:
    """The named columns this version of the table has."""
    names = set(table.schema.names)
    return [name for name in columns if name in names]
