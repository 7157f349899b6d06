"""How the store writes rows it is given as a stream: the rows are made (chunked, embedded) while
Lance reads them, so an error in the making must reach the caller as it was raised, and the last
check that this process may still commit runs once they are all made (rag/store/tables.py)."""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pyarrow as pa

from rag.store.errors import ROWS_FAILED


def streamed_write(
    write: Callable[[pa.Table | pa.RecordBatchReader], Any], rows: pa.Table | pa.RecordBatchReader,
    before_commit: Callable[[], None],
) -> Any:
    """Run the write (a merge, a table's creation) on `rows`. A reader's batches pass through a
    check: the first exception raised while making them (the embedder failed, the lease was lost)
    is kept and raised here, since Lance reports it as text; the last check is that this process
    may still commit, once they are made."""
    if isinstance(rows, pa.Table):
        return write(rows)
    failed: list[BaseException] = []

    def checked() -> Iterator[pa.RecordBatch]:
        try:
            yield from rows
            before_commit()
        except BaseException as exc:
            failed.append(exc)
            raise

    try:
        return write(pa.RecordBatchReader.from_batches(rows.schema, checked()))
    except Exception:
        if failed:
            setattr(failed[0], ROWS_FAILED, True)
            raise failed[0] from None
        raise


def add_columns(table: Any, schema: pa.Schema) -> None:
    """Add the row columns an index written by an earlier version lacks (empty in its old rows),
    so the write that follows can store them: the migration is the first write after an upgrade."""
    present = set(table.schema.names)
    missing = [field for field in schema if field.name not in present]
    if missing:
        table.add_columns(missing)
