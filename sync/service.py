"""One sync of the index with the docs source: the API behind `docsbot sync` and `/docs sync`.

Git source: fetch the branch into the private working copy, check out its head, then either
apply `git diff <indexed commit> <head>` (incremental) or reconcile by content hash when that
diff cannot be trusted. A local folder that is not a git repository is always reconciled.

Crash safety: all chunk changes of a sync go in one atomic write, and the indexed commit is
recorded in the store's metadata only AFTER it. A sync killed at any point leaves the index
answering from a consistent state, and the next sync re-applies the same diff (cheap: vectors
come from the cache) and records the commit.
"""
from __future__ import annotations

import json
import logging
import os
import signal
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from opentelemetry import trace

from rag import (
    DocumentError, Embedder, Index, Ownership, Provenance, chunking_signature, inside, left_out_pages, make_embedder,
    open_index, unindexed_files,
)
from sync import events
from sync.changes import Scope, changes_between
from sync.config import SyncConfig
from sync.errors import SyncError
from sync.folder import folder_provenance, head_commit
from sync.gitcmd import has_commit, is_ancestor, last_commits, redact
from sync.lease import WriterLease, checked_writes, writer_lease
from sync.progress import recording
from sync.reindex import Applied, apply_paths, reconcile
from sync.sources import sync_sources
from sync.report import FileCounts, SyncReport
from sync.unchanged import listing, record, record_outcome
from sync.workcopy import WorkCopy, is_local_uri, local_folder, repo_url

log = logging.getLogger("docsbot.sync")
_TRACER = trace.get_tracer(__name__)


def run_sync(
    config: SyncConfig, embedder: Embedder | None = None, lease: WriterLease | None = None,
    only: frozenset[str] | None = None,
) -> SyncReport:
    """Run one sync now (synchronous; the worker calls it in a thread) under the index-writer
    lease: `lease` when the caller holds it, else taken for this sync (SyncBusy when another
    process has it). With several sources, `only` names those to sync (None: all). The outcome
    is recorded in the state store; a failure is re-raised."""
    if lease is None:
        with writer_lease(config.lease) as held:
            return run_sync(config, embedder, held, only)
    store = open_index(config.rag.index)
    started = time.perf_counter()
    try:
        with recording(lease), _TRACER.start_as_current_span("sync"), checked_writes(store, lease):
            if config.sources is not None:
                report = sync_sources(config, store, embedder, lease, sync_store, fetch_head, only)
            else:
                report = sync_store(config, store, embedder, started, lease)
    except Exception as exc:
        _record_failure(lease, exc)
        events.events().sync_failed(time.perf_counter() - started)
        raise
    record_outcome(lease, ok=True, report=report.to_json())
    # The index gauges are read before, and published with, the run: a scrape that counts the
    # run never shows the index of before it (its chunk count took a while to read).
    events.events().sync_ok(report, store.meta(), store.chunk_count())
    log.info("%s", report.render())
    return report


def sync_store(
    config: SyncConfig, store: Index, embedder: Embedder | None, started: float, lease: WriterLease,
    head: str | None = None,
) -> SyncReport:
    """One repository (or folder) synced into `store`: the whole index, or one source's part.
    `head`: the commit a fetch already brought (fetch_head); None: the sync fetches."""
    folder = local_folder(config)
    if folder is None:
        return _sync_git(config, store, embedder, started, lease, head)
    return _sync_folder(config, store, embedder, folder, started, lease)


def fetch_head(config: SyncConfig) -> str | None:
    """Fetch a git source into its working copy and return its head; None for a folder, which
    has nothing to fetch. The sync of several sources fetches them all first, a few at once."""
    if local_folder(config) is not None:
        return None
    return WorkCopy.from_config(config).fetch()


def watched_path(config: SyncConfig) -> Path | None:
    """The local folder or local repository whose changes trigger a sync, if any."""
    folder = local_folder(config)
    if folder is not None:
        return folder
    url = config.repo or ""
    return Path(url) if url and is_local_uri(url) and Path(url).is_dir() else None


def index_signature(config: SyncConfig, embedder: Embedder, source: str) -> dict[str, Any]:
    """Everything besides the files that shapes the rows. When it differs from the one stored
    with the index, every row is rewritten (a reconcile; vectors still come from the cache)."""
    docs, links = config.rag.docs, config.rag.links
    return {
        "source": source,
        "scope": [links.repo_subdir.strip("/"), list(docs.include), list(docs.exclude), docs.max_file_bytes,
                  docs.index_drafts],
        "levels": [docs.default_level.name, {k: v.name for k, v in docs.path_levels.items()}],
        "links": [links.repo_web, links.pattern, links.site_url, links.site_layout],
        "chunking": chunking_signature(config.rag.chunking),
        "embedding": [embedder.name, embedder.dim],
    }


def _sync_git(
    config: SyncConfig, store: Index, embedder: Embedder | None, started: float, lease: WriterLease,
    head: str | None,
) -> SyncReport:
    copy = WorkCopy.from_config(config)
    head = head or copy.fetch()
    if not copy.checked_out(head):
        copy.checkout(head)
    embedder = embedder or make_embedder(config.rag, lazy=True)  # loaded when a chunk is new
    subdir = config.rag.links.repo_subdir.strip("/")
    root = _docs_root(copy.path, subdir)
    meta = store.meta()
    _say_if_replacing(store, meta, git_root(config), redact(repo_url(config)))
    indexed: str | None = meta.get("commit")
    signature = index_signature(config, embedder, "git")
    rebuild = meta.get("sync_signature") != signature
    reason = _reconcile_reason(copy.path, git_root(config), meta, indexed, head, rebuild)
    report = SyncReport(commit_before=indexed, commit_after=head)
    owners = Ownership.from_meta(meta)
    lease.check()
    _checkpoint(config, "before-write")
    if reason:
        provenance = _provenance(last_commits(copy.path, subdir, head))
        applied = reconcile(store, embedder, config.rag, root, provenance, rebuild)
        _fill(report, "reconcile", applied, reason)
        owners = Ownership(applied.owners)
    elif indexed and indexed != head:  # (no indexed commit is a reason)
        scope = Scope(subdir, config.rag.docs.include, config.rag.docs.exclude)
        changes = changes_between(copy.path, indexed, head, scope)
        changes.include_changed(store.includers(changes.touched))
        provenance = _provenance(last_commits(copy.path, subdir, head, only=set(changes.upsert)))
        stats, skipped, read = apply_paths(store, embedder, config.rag, root, changes.upsert, changes.removed,
                                           provenance)
        owners = owners.with_front_matter(read, [*changes.removed, *(path for path, _ in skipped)])
        changes.uncount(skipped)
        skipped = changes.skipped + skipped
        # Unchanged: the index's documents this commit left alone (a skipped file is no document).
        written = set(changes.upsert) - {path for path, _ in skipped}
        applied = Applied(
            added=changes.added, modified=changes.modified, deleted=changes.deleted, renamed=changes.renamed,
            unchanged=store.counts()["documents"] - len(written), skipped=skipped, stats=stats,
        )
        _fill(report, "incremental", applied)
    else:
        report.unchanged = store.counts()["documents"]
    _checkpoint(config, "after-write")
    _say_what_is_left_out(report, store, root, config)
    commit_date = meta.get("commit_date") if indexed == head else None  # the indexed commit's, recorded
    _record_success(store, report, signature, git_root(config), started, commit=head,
                    commit_date=commit_date or copy.commit_date(head), owners=owners.with_repository(copy.path, subdir),
                    before=meta)
    return report


def _docs_root(repo: Path, subdir: str) -> Path:
    """The docs folder of the checkout; a subfolder that is a symbolic link (it could point
    anywhere on the host) is refused."""
    try:
        return inside(repo, subdir) if subdir else repo
    except DocumentError:
        raise SyncError(f"DOCSBOT_REPO_SUBDIR={subdir}: a symbolic link in the repository, not a folder") from None


def _sync_folder(
    config: SyncConfig, store: Index, embedder: Embedder | None, folder: Path, started: float, lease: WriterLease
) -> SyncReport:
    root = folder.resolve()
    before = listing(root)  # before the files are read: one changed during this sync differs next time
    embedder = embedder or make_embedder(config.rag, lazy=True)
    meta = store.meta()
    _say_if_replacing(store, meta, str(root), str(root))
    signature = index_signature(config, embedder, f"folder:{root}")
    rebuild = meta.get("sync_signature") != signature
    report = SyncReport()
    lease.check()
    _checkpoint(config, "before-write")
    applied = reconcile(store, embedder, config.rag, root, folder_provenance(root), rebuild)
    _fill(report, "reconcile", applied, "local folder")
    _checkpoint(config, "after-write")
    _say_what_is_left_out(report, store, root, config)
    commit, commit_date = head_commit(root)  # as `docsbot index` records it (a folder outside git: none)
    _record_success(store, report, signature, str(root), started, commit=commit, commit_date=commit_date,
                    owners=Ownership(applied.owners).with_repository(root))
    record(config, root, before, (values[0] for values in store.doc_columns("access_rank").values()), report.skipped)
    return report


def _say_if_replacing(store: Index, meta: dict[str, Any], root: str, source: str) -> None:
    """A sync about to replace an index built from other docs (`docsbot index` of the sample docs,
    another folder) says so in one line, before it starts."""
    old = meta.get("docs_root")
    if old and old != root and store.exists():
        shown = old.removeprefix("git:") or "the repository's root" if old.startswith("git:") else old
        log.warning("replacing the index of %s (%d documents) with the docs of %s", shown,
                    store.counts()["documents"], source)


def git_root(config: SyncConfig) -> str:
    """What a git sync records as the index's docs root: the docs folder within the repository,
    not the working copy's path, which differs between the worker's and the standby's hosts.
    Anything else there (a folder path written by `docsbot index`) means the rows may not match
    the indexed commit, so the next sync reconciles."""
    return "git:" + config.rag.links.repo_subdir.strip("/")


def _reconcile_reason(
    repo: Path, root: str, meta: dict[str, Any], indexed: str | None, head: str, rebuild: bool
) -> str:
    """Why the git diff from the indexed commit cannot be trusted, or "" when it can."""
    if not indexed:
        return "no indexed commit"
    if rebuild:
        return "index settings changed"
    if meta.get("docs_root") != root:
        return "the index was last written from another folder"
    if indexed == head:  # just fetched, and its own ancestor: no git process to ask
        return ""
    if not has_commit(repo, indexed):
        return f"indexed commit {indexed[:7]} is not in the repository (history rewritten?)"
    if not is_ancestor(repo, indexed, head):
        return f"indexed commit {indexed[:7]} is not an ancestor of {head[:7]} (history rewritten)"
    return ""


def _provenance(commits: dict[str, tuple[str, str]]) -> dict[str, Provenance]:
    return {path: Provenance(commit, date) for path, (commit, date) in commits.items()}


def _fill(report: SyncReport, mode: str, applied: Applied, reason: str = "") -> None:
    for counted in fields(FileCounts):
        setattr(report, counted.name, getattr(applied, counted.name))
    report.mode, report.reason = mode, reason
    report.chunks_embedded, report.chunks_reused = applied.stats.chunks_embedded, applied.stats.chunks_reused


def _say_what_is_left_out(report: SyncReport, store: Index, root: Path, config: SyncConfig) -> None:
    """Every file under the docs root the globs leave out, counted by reason; and a sync that
    leaves the index empty says why when the globs are the reason: the tree holds pages of a
    format docsbot reads (a Sphinx tree under `DOCSBOT_INCLUDE=**/*.md`)."""
    report.unindexed = unindexed_files(root, config.rag.docs.include, config.rag.docs.exclude).lines()
    if store.counts()["documents"]:
        return
    left_out = left_out_pages(root, config.rag.docs.include, config.rag.docs.exclude)
    if left_out is not None:
        report.warnings.append(left_out.warning())


def _checkpoint(config: SyncConfig, point: str) -> None:
    """Fault injection (DOCSBOT_SYNC_KILL_AT): die here like a process killed by the OOM killer
    or a deploy, with no cleanup at all."""
    if config.kill_at == point:
        log.warning("DOCSBOT_SYNC_KILL_AT=%s: killing this sync process", point)
        os.kill(os.getpid(), signal.SIGKILL)


def _record_success(
    store: Index, report: SyncReport, signature: dict[str, Any], root: str, started: float,
    commit: str | None, commit_date: str | None, owners: Ownership, before: dict[str, Any] | None = None,
) -> None:
    """Written after the chunks, in one metadata write: the commit is only claimed once its
    changes are in the index (with who owns the documents: rag/owners.py). Not written when the
    metadata read `before` the sync holds the same already (a no-op sync): a write is a commit
    to the index and its summary, ~0.1 s, paid by every source of a sync of several."""
    report.seconds = time.perf_counter() - started
    values = {"commit": commit, "commit_date": commit_date, "sync_signature": signature, "docs_root": root,
              "ownership": owners.to_meta()}
    if before is not None and all(_as_stored(before.get(key)) == _as_stored(value) for key, value in values.items()):
        return
    store.set_meta(**values)


def _as_stored(value: Any) -> str:
    """A metadata value as the index keeps it (JSON: a tuple reads back as a list)."""
    return json.dumps(value, sort_keys=True, default=str)


def _record_failure(lease: WriterLease, exc: Exception) -> None:
    message = redact(str(exc)) or type(exc).__name__
    log.info("sync failed: %s", message)  # the caller reports it (the command's error line, the worker's log)
    record_outcome(lease, ok=False, error=message)
