"""A `docsbot sync` of a local folder that changed nothing since the last one, told without LanceDB.

A reconcile compares every file's content hash with the index's rows, so even a sync with nothing
to do imported LanceDB (~1 s of a 2.4 s `docsbot sync`). After each folder sync the service writes
`last-sync.json` beside the index (`record`): the folder's listing as it was before the sync read
it (path, size and modification time of every file under it), a digest of the settings that shape
the rows, the newest manifests of the index's tables after the sync's last write, and what a
sync and `docsbot sync`'s readable line report (documents, their access levels, skipped files). The next sync
first compares (`unchanged`): same folder, same listing, same settings and no commit to the index
since, and there is nothing to do.

A listing taken before the sync read the files makes a file changed while the sync ran differ at
the next look; a file modified within RACY_S of the listing could still be changed again within
the file system's timestamp granularity, so such a listing is not recorded (git's "racily clean"
entries). A folder inside a git work tree is never taken as unchanged: its documents' commits
can change with its files left as they were. Nothing here imports LanceDB or the model.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rag import left_out_pages, unindexed_files
from rag.index_summary import current_manifests
from state.db import StateUnavailable
from state.sync_status import SyncStatus
from sync.config import SyncConfig
from sync.errors import SyncError
from sync.gitcmd import toplevel
from sync.lease import WriterLease
from sync.report import SyncReport
from sync.workcopy import local_folder

log = logging.getLogger("docsbot.sync")

RECORD = "last-sync.json"
FORMAT = 1
TABLES = ("chunks", "meta")  # the tables a sync writes (rag/store/schema.py CHUNKS, META)
RACY_S = 2.0


@dataclass(frozen=True)
class Listing:
    """Every file under a folder, as a digest, and when it was taken."""

    digest: str
    taken_at_ns: int
    newest_mtime_ns: int

    @property
    def racy(self) -> bool:
        return self.newest_mtime_ns > self.taken_at_ns - int(RACY_S * 1e9)


@dataclass(frozen=True)
class LastSync:
    source: str
    settings: str
    files: str
    manifests: dict[str, str | None]
    documents: int
    ranks: dict[str, int]  # access rank -> documents at that rank
    skipped: list[tuple[str, str]]  # (path, reason): files that are no document, said again each sync

    def rank_counts(self) -> dict[int, int]:
        return {int(rank): count for rank, count in self.ranks.items()}


def local_index(config: SyncConfig) -> Path | None:
    """The index's folder, None for an index elsewhere (a bucket, Postgres): not recorded."""
    location = config.rag.index.location
    return None if "://" in location else Path(location)


def settings_digest(config: SyncConfig) -> str:
    """Every setting a folder sync's rows depend on (stricter than the service's index_signature:
    any change of these reconciles)."""
    rag = config.rag
    return hashlib.sha256(repr((rag.docs, rag.chunking, rag.links, rag.embedding)).encode()).hexdigest()


def listing(root: Path) -> Listing:
    """Path, size and modification time of every file and link under `root`, links not followed."""
    taken = time.time_ns()
    entries: list[str] = []
    newest = 0
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            info = os.lstat(os.path.join(folder, name))
            newest = max(newest, info.st_mtime_ns)
            entries.append(f"{os.path.relpath(os.path.join(folder, name), root)}\0{info.st_size}\0{info.st_mtime_ns}")
    digest = hashlib.sha256("\n".join(entries).encode("utf-8", "surrogateescape")).hexdigest()
    return Listing(digest, taken, newest)


def record(config: SyncConfig, root: Path, before: Listing, ranks: Iterable[int],
           skipped: list[tuple[str, str]]) -> None:
    """After a folder sync's last write to the index: what the next sync compares. A listing too
    close to a file's modification, or an index not in a local folder, leaves no record; one that
    cannot be written only makes the next sync a whole one."""
    index = local_index(config)
    if index is None:
        return
    path = index / RECORD
    partial = path.with_name(f"{RECORD}.partial{os.getpid()}")
    try:
        path.unlink(missing_ok=True)
        if before.racy or config.kill_at or toplevel(root) is not None:
            return
        counted = Counter(ranks)
        last = LastSync(f"folder:{root}", settings_digest(config), before.digest,
                        current_manifests(str(index), TABLES), sum(counted.values()),
                        {str(rank): count for rank, count in sorted(counted.items())}, skipped)
        partial.write_text(json.dumps({"format": FORMAT, **asdict(last)}), encoding="utf-8")
        partial.replace(path)
    except OSError as exc:
        log.warning("could not write %s (%s): the next sync reads the index", path, exc)
    finally:
        partial.unlink(missing_ok=True)


def unchanged(config: SyncConfig, root: Path) -> LastSync | None:
    """The last sync, when the folder, the settings and the index are as it left them; else None."""
    index = local_index(config)
    if index is None or config.kill_at or toplevel(root) is not None:
        return None
    try:
        data: dict[str, Any] = json.loads((index / RECORD).read_text(encoding="utf-8"))
        if data.pop("format") != FORMAT:
            return None
        last = LastSync(**{**data, "skipped": [(path, reason) for path, reason in data["skipped"]]})
    except (OSError, ValueError, TypeError, KeyError):
        return None
    if (last.source != f"folder:{root}" or last.settings != settings_digest(config)
            or last.manifests != current_manifests(str(index), TABLES)):
        return None
    return last if listing(root).digest == last.files else None


def unchanged_sync(config: SyncConfig, lease: WriterLease) -> tuple[SyncReport, LastSync] | None:
    """The report of a sync of a local folder with nothing to do (its outcome recorded as the
    service records one) and the last sync it repeats; None when a sync may have something to do."""
    started = time.perf_counter()
    if config.sources is not None:  # several sources: each is synced (a fetch tells what is new)
        return None
    try:
        folder = local_folder(config)
    except SyncError:  # the sync says so, and records it as its outcome
        return None
    last = None if folder is None else unchanged(config, folder.resolve())
    if folder is None or last is None:
        return None
    docs = config.rag.docs
    report = SyncReport(unchanged=last.documents, skipped=list(last.skipped),
                        reason="no file changed since the last sync")
    report.unindexed = unindexed_files(folder, docs.include, docs.exclude).lines()
    left_out = None if last.documents else left_out_pages(folder, docs.include, docs.exclude)
    if left_out is not None:
        report.warnings.append(left_out.warning())
    report.seconds = time.perf_counter() - started
    record_outcome(lease, ok=True, report=report.to_json())
    log.info("%s", report.render())
    return report, last


def record_outcome(lease: WriterLease, ok: bool, report: dict[str, Any] | None = None,
                   error: str | None = None) -> None:
    """A sync's outcome, for `docsbot status` on any process; a state store that cannot be reached
    loses only this line of status (the log has it)."""
    try:
        lease.call(lambda: SyncStatus(lease.db).record(ok, report, error))
    except StateUnavailable as exc:
        log.warning("could not record the sync's outcome: %s", exc)
