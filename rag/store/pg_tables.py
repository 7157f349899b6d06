"""The Postgres index's tables (migration 0008, state/migrations): connections, errors, metadata,
the vector cache, writes, the rebuild swap and maintenance. Searches and reads: postgres.py.

Every write is one transaction: a reader sees a document's old chunks or its new ones, never
neither, and a writer killed half-way leaves the previous rows. The write guard (the lease) is
asked right before each commit that changes what readers see, as on LanceDB.
"""
from __future__ import annotations

import functools
import inspect
import json
import logging
import struct
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator, TypeVar, cast

import numpy as np
import psycopg
import pyarrow as pa
import sqlalchemy as sa
from sqlalchemy.engine import Connection, make_url

from rag.store.errors import IndexMissing, IndexUnreadable, StoreError, WriteRefused, same_embedding
from rag.store.pg_indexes import (CHUNKS, TEXT_INDEXES, build_memory, bulk, graph_name, hnsw_index,
                                  search_indexes, selective_ranks, stale_statistics, text_index)
from rag.store.protocol import Index
from rag.store.schema import ROW_FIELDS

log = logging.getLogger("docsbot.index")
VECTORS, META = "docsbot_index_vectors", "docsbot_index_meta"  # CHUNKS: pg_indexes
# What BM25 needs, kept by triggers on CHUNKS in the writes' transactions (migration 0014).
TEXT_STATS, TERMS = "docsbot_index_text_stats", "docsbot_index_terms"  # POSTINGS: pg_indexes
SQL_TYPES = {pa.string(): "text", pa.int32(): "int4", pa.int8(): "int2"}
COLUMNS = [name for name, _ in ROW_FIELDS]
F = TypeVar("F", bound=Callable[..., Any])


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form of one vector."""
    return "[" + ",".join(map(str, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def driver_url(url: str) -> sa.URL:
    """The URL for SQLAlchemy with psycopg 3, whatever driver (or none) it names."""
    parsed = make_url(url.replace("postgres://", "postgresql://", 1))
    return parsed.set(drivername="postgresql+psycopg")


def database_errors(method: F) -> F:
    """A database that cannot be reached or read becomes IndexUnreadable: one line naming the
    index (its URL without the password) and the fix, instead of a driver traceback."""
    @functools.wraps(method)
    def guarded(self: PgTables, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sa.exc.DBAPIError as exc:
            raise self.unreadable(exc) from exc

    @functools.wraps(method)
    async def guarded_async(self: PgTables, *args: Any, **kwargs: Any) -> Any:
        try:
            return await method(self, *args, **kwargs)
        except sa.exc.DBAPIError as exc:
            raise self.unreadable(exc) from exc

    return cast(F, guarded_async if inspect.iscoroutinefunction(method) else guarded)


class PgTables:
    def __init__(self, url: str) -> None:
        self.url = driver_url(url)
        self.label = self.url.render_as_string(hide_password=True)
        self.uri = self.label  # what messages call the index
        self._engine = sa.create_engine(self.url, pool_pre_ping=True, pool_size=4, max_overflow=8)
        self._may_write: Callable[[], str | None] | None = None

    def unreadable(self, exc: sa.exc.DBAPIError) -> StoreError:
        """The StoreError a driver error stands for: tables missing, or a database that fails."""
        if isinstance(exc.orig, psycopg.errors.UndefinedTable):
            return IndexMissing(self._no_tables())
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig is not None and str(exc.orig).strip() else \
            type(exc.orig or exc).__name__
        return IndexUnreadable(f"the index database {self.label} cannot be read ({reason}): check that it is "
                               "up and DOCSBOT_INDEX_URL, then `docsbot index --rebuild` if its rows are damaged")

    @contextmanager
    def _reading(self) -> Iterator[Connection]:
        with self._engine.connect() as connection:
            yield connection

    @contextmanager
    def _writing(self) -> Iterator[Connection]:
        """One transaction, committed only once the guard still allows it."""
        with self._engine.connect() as connection:
            with connection.begin():
                yield connection
                self._before_commit()

    def _before_commit(self) -> None:
        reason = self._may_write() if self._may_write is not None else None
        if reason:
            raise WriteRefused(f"{reason}: stopped before writing to the index at {self.label}")

    @contextmanager
    def guarded(self, may_write: Callable[[], str | None]) -> Iterator[None]:
        self._may_write = may_write
        try:
            yield
        finally:
            self._may_write = None

    def replica_status(self) -> dict[str, Any] | None:
        return None  # every process reads the database itself

    # -- tables --------------------------------------------------------------------------------
    @database_errors
    def _tables_there(self) -> bool:
        with self._reading() as c:
            return c.execute(sa.text(f"SELECT to_regclass('{CHUNKS}') IS NOT NULL")).scalar() is True

    def _no_tables(self) -> str:
        return (f"no index tables in {self.label}: they come with the state migrations (revision 0008) on a "
                "Postgres whose `vector` extension (pgvector 0.8+) is installed or can be created: install it, "
                "then run `docsbot migrate` with DOCSBOT_DATABASE_URL set to this database")

    def _require_tables(self) -> None:
        if not self._tables_there():
            raise IndexMissing(self._no_tables())

    @database_errors
    def exists(self) -> bool:
        if not self._tables_there():
            return False
        with self._reading() as c:
            return bool(c.execute(sa.text(f"SELECT EXISTS (SELECT 1 FROM {CHUNKS}) OR EXISTS (SELECT 1 FROM {META})"))
                        .scalar())

    def _existing(self) -> None:
        """IndexMissing, saying what to do, when there is no index to read."""
        if not self.exists():
            self._require_tables()
            raise IndexMissing(f"no index at {self.label}: run `docsbot index` (or `docsbot sync`) first")

    # -- metadata ------------------------------------------------------------------------------
    @database_errors
    def meta(self) -> dict[str, Any]:
        if not self._tables_there():
            return {}
        with self._reading() as c:
            return {key: json.loads(value) for key, value in c.execute(sa.text(f"SELECT key, value FROM {META}"))}

    @database_errors
    def set_meta(self, **values: Any) -> None:
        self._require_tables()
        with self._writing() as c:
            _upsert_meta(c, values)

    def check_embedding(self, model: str, dim: int) -> dict[str, Any]:
        return same_embedding(self.meta(), model, dim)

    # -- vector cache --------------------------------------------------------------------------
    @database_errors
    def cached_vectors(self, text_hashes: list[str]) -> dict[str, np.ndarray]:
        if not text_hashes or not self._tables_there():
            return {}
        query = sa.text(f"SELECT text_hash, vector::real[] FROM {VECTORS} WHERE text_hash = ANY(:hashes)")
        with self._reading() as c:
            rows = c.execute(query, {"hashes": sorted(set(text_hashes))})
            return {h: np.asarray(v, dtype=np.float32) for h, v in rows}

    @database_errors
    def cached_hashes(self, text_hashes: list[str]) -> set[str]:
        if not text_hashes or not self._tables_there():
            return set()
        with self._reading() as c:
            rows = c.execute(sa.text(f"SELECT text_hash FROM {VECTORS} WHERE text_hash = ANY(:hashes)"),
                             {"hashes": list(text_hashes)})
            return {h for (h,) in rows}

    @database_errors
    def cache_vectors(self, text_hashes: list[str], vectors: np.ndarray) -> None:
        if not text_hashes:
            return
        self._require_tables()
        with self._engine.begin() as c:  # not guarded: a late write of a text's vector is harmless
            _copy(c, "text_hash text, vector vector", zip(text_hashes, _vectors(np.asarray(vectors))),
                  ["text", "bytea"])
            c.execute(sa.text(f"INSERT INTO {VECTORS} SELECT text_hash, vector FROM staged "
                              "ON CONFLICT (text_hash) DO NOTHING"))

    # -- writes --------------------------------------------------------------------------------
    @database_errors
    def reset(self) -> None:
        self._require_tables()
        with self._writing() as c:
            c.execute(sa.text(f"TRUNCATE {CHUNKS}, {VECTORS}, {META}"))

    @database_errors
    def write(self, rows: pa.Table | pa.RecordBatchReader, replace_paths: Iterable[str] | None) -> None:
        """Upsert rows and delete the other chunks of `replace_paths` (None: of every document),
        in one transaction. A reader's rows are staged as they are made: an error while they are
        made rolls everything back and reaches the caller as it was raised."""
        self._require_tables()
        with self._writing() as c:
            self._make_room(_stage_rows(c, rows))
            paths = None if replace_paths is None else sorted(set(replace_paths))
            _merge_staged(c, paths)

    def _make_room(self, added: int) -> None:
        """Drop the search indexes before `added` staged rows are merged when the write is big
        enough (pg_indexes.bulk): the next maintain() builds them again. Its own connection,
        outside the write's transaction (which holds no lock on the index tables yet): readers
        are never held up, and search the rows they see without them until they are back."""
        with self._engine.connect().execution_options(isolation_level="AUTOCOMMIT") as c:
            present = int(c.execute(sa.text(f"SELECT rows FROM {TEXT_STATS}")).scalar() or 0)
            names = search_indexes(c)
            if not names or not bulk(added, present):
                return
            self._before_commit()  # a writer that lost its lease leaves them alone
            log.info("writing %d rows into %d without the search indexes; maintain builds them again", added, present)
            for name in names:
                c.exec_driver_sql(f"DROP INDEX CONCURRENTLY IF EXISTS {name}")

    @database_errors
    def maintain(self, ann_min_rows: int) -> None:
        """The HNSW index for the dimension the vectors have (one per dimension: the column has
        none), a partial one for each access level whose readers pass at most PARTIAL_MAX_SHARE
        of the rows (pg_indexes), and the text indexes: those a big write dropped built again (with
        maintenance_work_mem raised so a graph fits in it), and planner statistics, made again
        before a build or once a tenth of the rows changed (pg_indexes.stale_statistics: ANALYZE
        took 2.8 s of a one-file sync at 100k rows). `ann_min_rows` is not needed: with iterative
        scans a filtered search through HNSW keeps going until it has its rows, and the planner
        scans exactly where the filter passes few. Plain CREATE INDEX: it holds up other writers,
        never readers, and a build cut short leaves no index behind."""
        self._before_commit()
        with self._engine.connect() as c:
            dim = c.execute(sa.text(f"SELECT vector_dims(vector) FROM {CHUNKS} LIMIT 1")).scalar()
            present = set(search_indexes(c))
            missing = [text_index(name) for name in TEXT_INDEXES if name not in present]
            if missing or (dim is not None and graph_name(int(dim), None) not in present) or stale_statistics(c):
                c.exec_driver_sql(f"ANALYZE {CHUNKS}")  # selective_ranks reads its statistics
            if dim is not None:
                missing += [hnsw_index(int(dim), rank) for rank in [None, *selective_ranks(c)]
                            if graph_name(int(dim), rank) not in present]
            if missing:
                rows = int(c.execute(sa.text(f"SELECT rows FROM {TEXT_STATS}")).scalar() or 0)
                c.exec_driver_sql(f"SET LOCAL maintenance_work_mem = '{build_memory(c, rows, int(dim or 0))}'")
                for statement in missing:
                    c.exec_driver_sql(statement)
                c.exec_driver_sql(f"ANALYZE {CHUNKS}")
            c.commit()

    def rebuild(self, build: Callable[[Index], pa.Table], meta: dict[str, Any], reuse_vectors: bool) -> None:
        """The rows are made with this index's own vector cache (emptied first when its vectors are
        of another model), then chunks and metadata are replaced in one transaction: readers see
        the old rows until it commits."""
        if not reuse_vectors:
            self._clear_cache()
        rows = build(cast(Index, self))
        self._swap(rows, meta)

    @database_errors
    def _clear_cache(self) -> None:
        self._require_tables()
        with self._writing() as c:
            c.execute(sa.text(f"TRUNCATE {VECTORS}"))

    @database_errors
    def _swap(self, rows: pa.Table, meta: dict[str, Any]) -> None:
        with self._writing() as c:
            self._make_room(_stage_rows(c, rows))
            _merge_staged(c, None)
            c.execute(sa.text(f"DELETE FROM {META}"))
            _upsert_meta(c, meta)

    # -- counts ----------------------------------------------------------------------------------
    @database_errors
    def chunk_count(self) -> int:
        self._existing()
        with self._reading() as c:
            return int(c.execute(sa.text(f"SELECT count(*) FROM {CHUNKS}")).scalar() or 0)

    @database_errors
    def counts(self) -> dict[str, int]:
        if not self._tables_there():
            return {"documents": 0, "chunks": 0}
        with self._reading() as c:
            documents, chunks = c.execute(sa.text(
                f"SELECT count(*) FILTER (WHERE ordinal = 0), count(*) FROM {CHUNKS}")).one()
        return {"documents": int(documents), "chunks": int(chunks)}


def _upsert_meta(c: Connection, values: dict[str, Any]) -> None:
    for key, value in values.items():
        c.execute(sa.text(f"INSERT INTO {META} (key, value) VALUES (:key, :value) "
                          "ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
                  {"key": key, "value": json.dumps(value)})


def _copy(c: Connection, columns: str, rows: Iterable[tuple[Any, ...]], types: list[str]) -> int:
    """Rows into a new temporary table `staged` (dropped at commit), by binary COPY; how many."""
    c.exec_driver_sql("DROP TABLE IF EXISTS staged")
    c.exec_driver_sql(f"CREATE TEMPORARY TABLE staged ({columns}) ON COMMIT DROP")
    cursor = c.connection.driver_connection.cursor()  # type: ignore[union-attr]
    names = ", ".join(part.split()[0] for part in columns.split(", "))
    with cursor.copy(f"COPY staged ({names}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(types)
        count = 0
        for count, row in enumerate(rows, 1):
            copy.write_row(row)
    return count


def _vectors(vectors: np.ndarray) -> list[bytes]:
    """Each vector in pgvector's binary form (vector_recv: the dimensions and a reserved int16,
    then the float4s, big-endian), which binary COPY hands to a `vector` column as it is, sent as
    bytea: a fifth of the time float4[] from Python lists took (10k rows: 0.78 against 3.5 s)."""
    big_endian = np.ascontiguousarray(vectors, dtype=">f4").reshape(len(vectors), -1)
    head = struct.pack(">hh", big_endian.shape[1], 0)
    return [head + row.tobytes() for row in big_endian]


def _stage_rows(c: Connection, rows: pa.Table | pa.RecordBatchReader) -> int:
    """Every chunk row into `staged`, batch by batch as the reader makes them; how many."""
    fields = [(name, SQL_TYPES[kind]) for name, kind in ROW_FIELDS]
    columns = ", ".join(f'"{name}" {kind}' for name, kind in fields) + ", vector vector"

    def tuples() -> Iterator[tuple[Any, ...]]:
        for batch in rows.to_batches() if isinstance(rows, pa.Table) else rows:
            present = set(batch.schema.names)
            values = [batch.column(name).to_pylist() if name in present else [None] * batch.num_rows
                      for name, _ in fields]
            vectors = _vectors(batch.column("vector").flatten().to_numpy().reshape(batch.num_rows, -1))
            yield from zip(*values, vectors)

    return _copy(c, columns, tuples(), [kind for _, kind in fields] + ["bytea"])


def _merge_staged(c: Connection, paths: list[str] | None) -> None:
    """Upsert the staged rows; delete the chunks of `paths` (None: of every document) not staged."""
    quoted = ", ".join(f'"{name}"' for name in COLUMNS)
    updates = ", ".join(f'"{name}" = excluded."{name}"' for name in COLUMNS if name != "chunk_id")
    c.execute(sa.text(f"INSERT INTO {CHUNKS} ({quoted}, vector) SELECT {quoted}, vector FROM staged "
                      f"ON CONFLICT (chunk_id) DO UPDATE SET {updates}, vector = excluded.vector"))
    gone = "NOT EXISTS (SELECT 1 FROM staged WHERE staged.chunk_id = c.chunk_id)"
    if paths is None:
        c.execute(sa.text(f"DELETE FROM {CHUNKS} c WHERE {gone}"))
    elif paths:
        c.execute(sa.text(f"DELETE FROM {CHUNKS} c WHERE doc_path = ANY(:paths) AND {gone}"), {"paths": paths})

