"""A replica's local copy of an index kept on object storage (`DOCSBOT_DATA_DIR=s3://…`), so it
keeps answering while the bucket is unreachable.

A read-only process (`docsbot serve`) searches a local folder, never the bucket. Every
DOCSBOT_INDEX_REFRESH_S it lists the manifests of the tables searches read (chunks and meta, not
the vector cache); when one changed, it copies the files it lacks and then pins the store to
the new versions in one step. Lance writes every file (data, deletion, index, manifest) once
under a new name and never rewrites it, so "the files it lacks" are all a new version needs,
and a file already here is complete (each is copied under a temporary name, then renamed).

- A reader never sees half of a sync: the store reads pinned table versions, and the pins move
  only once every file of the new versions is here. A copy that fails midway leaves the previous
  versions pinned (what it did copy is reused next time).
- Bucket unreachable: searches go on from the last copy; one WARNING when the outage starts, one
  INFO when it ends. The copy and its pins survive a restart (`mirror.json`).
- Files the bucket no longer has (a writer's cleanup of old versions) are deleted here with the
  copy of the version after the one they vanished at, when no search can still be reading them.

Only pyarrow's file systems are used (`FileSystem.from_uri`): credentials and endpoint come from
the standard AWS_* variables, exactly as LanceDB reads them.
"""
from __future__ import annotations

import fcntl
import json
import logging
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Callable

import pyarrow.fs as pafs

from rag.config import IndexConfig
from rag.store.protocol import Index
from rag.store.schema import CHUNKS, META
from rag.store.search import Store
from rag.index_summary import VERSIONS, listed_manifests, manifest_identity, manifest_version

log = logging.getLogger("docsbot.index")

MIRRORED = (CHUNKS, META)  # what searches and status read; the vector cache stays in the bucket
WRITERS_ONLY = "_transactions/"  # read when committing, never by a search
PARTIAL = ".partial"
STATE = "mirror.json"
MIN_REFRESH_S = 1.0  # DOCSBOT_INDEX_REFRESH_S=0 (check on every read) must not list the bucket in a busy loop
COPY_THREADS = 8  # object stores answer many small GETs in parallel much faster than in turn


class MirrorUnavailable(RuntimeError):
    """The bucket could not be listed or a file could not be copied (message says why)."""


@dataclass(frozen=True)
class Snapshot:
    """The table versions the local copy holds and the store reads."""

    uri: str
    versions: dict[str, int]
    manifests: dict[str, str]  # table -> "name size mtime" of its manifest: a recreated table differs
    taken_at: float  # epoch seconds these versions were copied

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def iso(epoch: float | None) -> str | None:
    return None if epoch is None else datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


class IndexMirror:
    """Copies the newest versions of a remote index's searched tables into `folder`."""

    def __init__(self, uri: str, folder: Path) -> None:
        """ValueError when pyarrow has no file system for the URI's scheme."""
        self.uri = uri
        self.folder = folder
        self.fs: pafs.FileSystem | None = None
        self.root = ""
        self._kept: set[str] | None = None  # the remote's files at the last copy (None: unknown)
        try:
            self._connect()
        except OSError:  # e.g. the bucket's region cannot be looked up now: refresh() tries again
            pass

    def _connect(self) -> pafs.FileSystem:
        if self.fs is None:
            self.fs, root = pafs.FileSystem.from_uri(self.uri)
            self.root = root.rstrip("/")
        return self.fs

    # -- the saved state ---------------------------------------------------------------------
    def saved(self) -> Snapshot | None:
        """The snapshot of the last copy made into this folder (by this or an earlier process),
        when it is of this index and its manifests are here."""
        try:
            data = json.loads((self.folder / STATE).read_text())
            snapshot = Snapshot(data["uri"], data["versions"], data["manifests"], float(data["taken_at"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        here = all((self.folder / f"{t}.lance" / VERSIONS / m.split()[0]).is_file()
                   for t, m in snapshot.manifests.items())
        return snapshot if snapshot.uri == self.uri and CHUNKS in snapshot.versions and here else None

    def _save(self, snapshot: Snapshot) -> None:
        partial = self.folder / (STATE + PARTIAL)
        partial.write_text(json.dumps(snapshot.to_json()))
        partial.replace(self.folder / STATE)

    # -- copying -----------------------------------------------------------------------------
    def refresh(self, current: Snapshot | None) -> Snapshot | None:
        """Bring the copy up to the bucket's newest versions: `current` when nothing changed,
        None when the bucket holds no index yet, else the new snapshot, whose files are all here.
        MirrorUnavailable when the bucket cannot be read."""
        try:
            try:
                return self._refresh(current)
            except FileNotFoundError:  # listed, then cleaned up by the writer before we copied it
                return self._refresh(current)
        except OSError as exc:
            raise MirrorUnavailable(f"{self.uri}: {_first_line(exc)}") from exc

    def _refresh(self, current: Snapshot | None) -> Snapshot | None:
        self._connect()
        manifests = listed_manifests(self._connect(), self.root, MIRRORED)
        if CHUNKS not in manifests:
            return None
        identity = {t: manifest_identity(info.base_name, info.size, info.mtime_ns) for t, info in manifests.items()}
        if current is not None and current.manifests == identity:
            return current
        started = time.monotonic()
        # Listed after the manifests: every file a listed manifest names was written before it.
        listed = {rel for table in manifests for rel in self._files(table)}
        copied = self._copy(sorted(rel for rel in listed if not (self.folder / rel).exists()))
        # Manifests last: a version is complete here before anything can pin it. A manifest is
        # copied even when its name is here: a table dropped and created anew reuses the names.
        pinned = [f"{t}.lance/{VERSIONS}/{info.base_name}" for t, info in manifests.items()]
        copied += self._copy(pinned)
        versions = {t: manifest_version(info.base_name) or 0 for t, info in manifests.items()}
        snapshot = Snapshot(self.uri, versions, identity, time.time())
        self._save(snapshot)
        self._prune(listed | set(pinned))
        log.info("index mirror: copied %d files (%.0f kB) of %s in %.2f s",
                 len(copied), sum(copied) / 1e3, _describe(versions), time.monotonic() - started)
        return snapshot

    def _files(self, table: str) -> list[str]:
        """The table's data, deletion and index files (relative to the index root)."""
        selector = pafs.FileSelector(f"{self.root}/{table}.lance", recursive=True, allow_not_found=True)
        prefix = len(self.root) + 1
        rels = [i.path[prefix:] for i in self._connect().get_file_info(selector) if i.type == pafs.FileType.File]
        return [r for r in rels if not r.startswith((f"{table}.lance/{VERSIONS}/", f"{table}.lance/{WRITERS_ONLY}"))]

    def _copy(self, rels: list[str]) -> list[int]:
        """Copy these files; their sizes. The first failure is raised once the others finished."""
        if not rels:
            return []
        with ThreadPoolExecutor(min(COPY_THREADS, len(rels))) as pool:
            return list(pool.map(self._copy_one, rels))

    def _copy_one(self, rel: str) -> int:
        target = self.folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f"{target.name}{PARTIAL}{threading.get_ident()}")
        try:
            with self._connect().open_input_stream(f"{self.root}/{rel}") as source, open(partial, "wb") as sink:
                size = _pour(source, sink)
            partial.replace(target)
            return size
        finally:
            partial.unlink(missing_ok=True)

    def _prune(self, listed: set[str]) -> None:
        """Delete files neither this listing nor the previous one has: the bucket dropped them
        (old versions cleaned up) before the previous copy, so no search still reads them."""
        previous, self._kept = self._kept, listed
        if previous is None:  # the first copy of this process: what older versions need is unknown
            return
        keep = listed | previous
        for table in MIRRORED:
            base = self.folder / f"{table}.lance"
            for path in base.rglob("*") if base.is_dir() else ():
                rel = path.relative_to(self.folder).as_posix()
                if path.is_file() and rel not in keep:
                    path.unlink(missing_ok=True)


def _pour(source: BinaryIO, sink: BinaryIO) -> int:
    size = 0
    while chunk := source.read(1 << 20):
        sink.write(chunk)
        size += len(chunk)
    return size


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _describe(versions: dict[str, int]) -> str:
    return ", ".join(f"{table} v{version}" for table, version in sorted(versions.items()))


class MirroredIndex:
    """A Store over the local copy of a remote index, kept current from a background thread."""

    def __init__(self, uri: str, folder: Path, refresh_s: float, release: Callable[[], None] | None = None) -> None:
        self.uri = uri
        self.folder = folder
        self.refresh_s = refresh_s
        self._release = release  # held for the process's life: it keeps the folder's lock (see mirror_folder)
        self.mirror = IndexMirror(uri, folder)
        self.store = Store(str(folder), refresh_s=None, label=uri, replica=self.status)
        self.snapshot = self.mirror.saved()
        self.store.pin(self.snapshot.versions if self.snapshot else {})
        self.checked_at: float | None = None  # when the bucket last answered
        self.down_since: float | None = None
        self.error: str | None = None

    def refresh(self) -> None:
        """One look at the bucket; copies and pins a new version when there is one."""
        try:
            snapshot = self.mirror.refresh(self.snapshot)
        except MirrorUnavailable as exc:
            self.error = str(exc)
            if self.down_since is None:
                self.down_since = time.time()
                log.warning("cannot read the index bucket (%s); answering from %s until it is back", exc, self._held())
            return
        if self.down_since is not None:
            log.info("index bucket reachable again after %.0f s", time.time() - self.down_since)
        self.down_since, self.error, self.checked_at = None, None, time.time()
        if snapshot is not None and snapshot != self.snapshot:
            self.store.pin(snapshot.versions)
            self.snapshot = snapshot

    def _held(self) -> str:
        if self.snapshot is None:
            return "nothing: no copy of the index here yet"
        return f"the local copy of {_describe(self.snapshot.versions)} taken at {iso(self.snapshot.taken_at)}"

    def start(self) -> "MirroredIndex":
        """Copy the newest version now (the process starts on it), then keep refreshing."""
        self.refresh()
        threading.Thread(target=self._run, name="index-mirror", daemon=True).start()  # until the process exits
        return self

    def _run(self) -> None:
        while True:
            time.sleep(max(self.refresh_s, MIN_REFRESH_S))
            try:
                self.refresh()
            except Exception:  # a bug must not end the refreshes: searches would go stale silently
                log.exception("index mirror refresh failed")

    def status(self) -> dict[str, Any]:
        """For `/docs status`: what is served, and whether the bucket answers."""
        return {
            "mirror_of": self.uri,
            "versions": self.snapshot.versions if self.snapshot else {},
            "taken_at": iso(self.snapshot.taken_at) if self.snapshot else None,
            "checked_at": iso(self.checked_at),
            "unreachable_since": iso(self.down_since),
            "error": self.error,
        }


def is_remote(uri: str) -> bool:
    return "://" in uri and not uri.startswith("file://")


def mirror_folder(config: IndexConfig) -> tuple[Path, Callable[[], None]]:
    """(folder, release): `<DOCSBOT_WORK_DIR>/index-mirror`, kept across restarts, when this
    process can lock it (release unlocks it); otherwise a private temporary folder, removed by
    release or at exit."""
    if config.work_dir:
        folder = Path(config.work_dir) / "index-mirror"
        folder.mkdir(parents=True, exist_ok=True)
        lock = open(folder / ".lock", "w")  # locked while open: `release` keeps it referenced
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return folder, lock.close
        except BlockingIOError:
            lock.close()
            log.error("another process mirrors the index into %s: give each replica its own "
                      "DOCSBOT_WORK_DIR; using a temporary copy", folder)
    scratch = tempfile.TemporaryDirectory(prefix="docsbot-index-mirror-")  # its finalizer removes it at exit
    return Path(scratch.name), scratch.cleanup


def open_lance(config: IndexConfig, read_only: bool = False) -> Index:
    """The LanceDB index as this process should read it: a read-only process whose index is on
    object storage reads a local mirror of it (started here); every other reads the location
    itself, as does a replica whose URI pyarrow cannot list (LanceDB may still read it)."""
    location = config.location
    if read_only and is_remote(location):
        folder, release = mirror_folder(config)
        try:
            refresh_s = config.refresh_s if config.refresh_s is not None else MIN_REFRESH_S
            return MirroredIndex(location, folder, refresh_s, release).start().store
        except ValueError as exc:
            release()
            log.warning("no local mirror of %s (%s): searches read it directly, and stop while it is "
                        "unreachable", location, _first_line(exc))
    return Store(location, refresh_s=config.refresh_s)
