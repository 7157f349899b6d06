"""The index's summary: a small JSON file beside the tables (`summary.json`) holding what
`docsbot status` shows of the index (document and chunk counts, indexed commit and its date), so
status can answer without importing LanceDB (2-3 s of imports, most of a 4-5 s `status`).

The store rewrites it after each of its commits to the chunks or meta table (rag/store/tables.py), with
the newest manifest of each of those tables at that moment. A summary is current when those are
still the newest manifests: any later commit (a writer killed before it rewrote the summary, an
older docsbot, a copy of the index moved to a bucket) leaves it older than the index, and the
reader then opens the index instead. Lance writes each manifest once under a new name; a table
dropped and created again reuses the names, so a manifest is known by name, size and mtime.

Only the standard library is imported here (and pyarrow's file systems, lazily, for an index on
object storage): this module must stay cheap to import.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow.fs as pafs

SUMMARY = "summary.json"
FORMAT = 2  # raised when the fields change: a summary of another format is not read
VERSIONS = "_versions"
DATA_FOLDERS = ("data", "_deletions")  # what a read of the table opens besides its manifest
V2_NAME_DIGITS = 20  # Lance's V2 manifest names: u64::MAX - version, zero-padded to 20 digits


def manifest_version(name: str) -> int | None:
    """The table version a `_versions/` file name stands for (both of Lance's naming schemes)."""
    stem, dot, suffix = name.rpartition(".")
    if not dot or suffix != "manifest" or not stem.isdigit():
        return None
    return 2**64 - 1 - int(stem) if len(stem) == V2_NAME_DIGITS else int(stem)


def manifest_identity(name: str, size: int, mtime_ns: int) -> str:
    """How a manifest is told apart from another of the same name (a table created anew)."""
    return f"{name} {size} {mtime_ns}"


@dataclass(frozen=True)
class IndexSummary:
    documents: int
    chunks: int
    commit: str | None
    commit_date: str | None
    # table -> identity of its newest manifest when this was written (None: no such table)
    manifests: dict[str, str | None]
    written_at: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, **asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> IndexSummary:
        """ValueError when `data` is not a summary of this format."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ValueError("not a summary of this version")
        try:
            summary = cls(int(data["documents"]), int(data["chunks"]), data["commit"], data["commit_date"],
                          dict(data["manifests"]), str(data["written_at"]))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a summary: {exc}") from None
        return summary


def listed_manifests(fs: pafs.FileSystem, root: str, tables: tuple[str, ...]) -> dict[str, pafs.FileInfo]:
    """The newest manifest of each of `tables` that exists, on a pyarrow file system."""
    import pyarrow.fs as pafs

    newest: dict[str, pafs.FileInfo] = {}
    for table in tables:
        selector = pafs.FileSelector(f"{root}/{table}.lance/{VERSIONS}", allow_not_found=True)
        infos = [i for i in fs.get_file_info(selector)
                 if i.type == pafs.FileType.File and manifest_version(i.base_name) is not None]
        if infos:
            newest[table] = max(infos, key=lambda i: manifest_version(i.base_name) or 0)
    return newest


def current_manifests(uri: str, tables: tuple[str, ...]) -> dict[str, str | None]:
    """table -> identity of its newest manifest now, with the names and sizes of the data files
    it can read (a data file deleted or cut short since, with no new commit, is a damaged index
    that the summary must not hide); None: the table does not exist."""
    if "://" in uri:
        fs, root = _filesystem(uri)
        listed = listed_manifests(fs, root, tables)
        return {t: f"{manifest_identity(listed[t].base_name, listed[t].size, listed[t].mtime_ns)} "
                   f"{_remote_files(fs, f'{root}/{t}.lance')}" if t in listed else None for t in tables}
    found = {table: _newest_local(Path(uri) / f"{table}.lance" / VERSIONS) for table in tables}
    return {t: f"{found[t]} {_local_files(Path(uri) / f'{t}.lance')}" if found[t] else None for t in tables}


def _digest(files: list[tuple[str, int]]) -> str:
    return hashlib.sha256("\n".join(f"{name} {size}" for name, size in sorted(files)).encode()).hexdigest()[:16]


def _local_files(table: Path) -> str:
    files = []
    for folder in DATA_FOLDERS:
        try:
            files += [(f"{folder}/{e.name}", e.stat().st_size) for e in os.scandir(table / folder) if e.is_file()]
        except FileNotFoundError:
            continue
    return _digest(files)


def _remote_files(fs: pafs.FileSystem, table: str) -> str:
    import pyarrow.fs as pafs

    files = [(f"{folder}/{i.base_name}", i.size or 0) for folder in DATA_FOLDERS
             for i in fs.get_file_info(pafs.FileSelector(f"{table}/{folder}", allow_not_found=True))
             if i.type == pafs.FileType.File]
    return _digest(files)


def _newest_local(folder: Path) -> str | None:
    try:
        names = [entry.name for entry in os.scandir(folder) if manifest_version(entry.name) is not None]
    except FileNotFoundError:
        return None
    if not names:
        return None
    name = max(names, key=lambda n: manifest_version(n) or 0)
    info = (folder / name).stat()
    return manifest_identity(name, info.st_size, info.st_mtime_ns)


@lru_cache(maxsize=8)
def _filesystem(uri: str) -> tuple[pafs.FileSystem, str]:
    """The file system and root of an index URI, made once per process (it may look up a region)."""
    import pyarrow.fs as pafs

    fs, root = pafs.FileSystem.from_uri(uri)
    return fs, root.rstrip("/")


def write_summary(uri: str, summary: IndexSummary) -> None:
    """Replace the summary in one step: a reader sees the old file or the new one, whole (a
    rename on a disk; an object store's PUT). OSError when it cannot be written."""
    data = json.dumps(summary.to_json(), indent=1).encode()
    if "://" in uri:
        fs, root = _filesystem(uri)
        with fs.open_output_stream(f"{root}/{SUMMARY}") as sink:
            sink.write(data)
        return
    folder = Path(uri)
    partial = folder / f"{SUMMARY}.partial{os.getpid()}"
    try:
        partial.write_bytes(data)
        partial.replace(folder / SUMMARY)
    finally:
        partial.unlink(missing_ok=True)


def read_summary(uri: str) -> tuple[IndexSummary | None, str]:
    """(the summary, "") when it describes the index as it is now; else (None, why not):
    "missing", "unreadable" or "older than the index". A local folder without any table is an
    empty index, summary or not. OSError when an object store cannot be read."""
    try:
        data = _read_bytes(uri)
    except FileNotFoundError:
        if "://" not in uri and not _has_tables(Path(uri)):
            return IndexSummary(0, 0, None, None, {}), ""
        return None, "missing"
    try:
        summary = IndexSummary.from_json(json.loads(data.decode()))
    except ValueError:  # not JSON, not UTF-8, or not a summary of this format
        return None, "unreadable"
    if current_manifests(uri, tuple(summary.manifests)) != summary.manifests:
        return None, "older than the index"
    return summary, ""


def _read_bytes(uri: str) -> bytes:
    if "://" in uri:
        fs, root = _filesystem(uri)
        with fs.open_input_stream(f"{root}/{SUMMARY}") as source:
            return bytes(source.read())
    return (Path(uri) / SUMMARY).read_bytes()


def _has_tables(folder: Path) -> bool:
    try:
        return any(entry.name.endswith(".lance") for entry in os.scandir(folder))
    except FileNotFoundError:
        return False
