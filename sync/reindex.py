"""Applying a sync to the index through `rag.indexer.apply_documents`: one atomic write per sync.

Two ways to decide what to write. `apply_changes` takes the paths a git diff named. `reconcile`
compares every file at head with what is indexed (content hash and last commit), for when the
diff cannot be trusted (no indexed commit, rewritten history, a plain folder, changed settings).
Either way unchanged text is never embedded again: vectors come from the cache by text hash.

A file that cannot be read cleanly (binary, too large, not UTF-8, broken front matter) is skipped
with its reason AND its previously indexed chunks are removed: stale text must not be served as
the current version of a document that now says something else. A file git tracks with a path too
long for the file system is not in the work tree (see `sync.workcopy`); a reconcile reports it too.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rag import (
    Document, DocumentError, Embedder, Index, IndexStats, Provenance, RagConfig, apply_documents, front_matter_of,
    in_scope, read_document, shown_path, too_long,
)
from sync.gitcmd import GitError, git_records
from sync.report import FileCounts


@dataclass
class Applied(FileCounts):
    """What a write did, in the terms of a sync report."""

    stats: IndexStats = field(default_factory=IndexStats)
    # path -> front matter `owner` of every readable document (a reconcile reads them all).
    owners: dict[str, str] = field(default_factory=dict)


def read_documents(
    root: Path, paths: list[str], config: RagConfig
) -> tuple[list[Document], list[tuple[str, str]]]:
    docs, skipped = [], []
    rules = config.docs.access_rules()
    for rel in paths:
        try:
            docs.append(read_document(root, rel, rules, config.docs.max_file_bytes, drafts=config.docs.index_drafts))
        except DocumentError as exc:
            skipped.append((rel, str(exc)))
    return docs, skipped


def write(
    store: Index, embedder: Embedder, config: RagConfig, docs: list[Document],
    provenance: dict[str, Provenance], removed: list[str], full: bool = False,
) -> IndexStats:
    """One atomic write, or none when there is nothing to change."""
    if not (docs or removed or full):
        return IndexStats()
    return apply_documents(store, embedder, config, docs, provenance, removed=removed, full=full)


def apply_paths(
    store: Index, embedder: Embedder, config: RagConfig, root: Path,
    upsert: list[str], removed: list[str], provenance: dict[str, Provenance],
) -> tuple[IndexStats, list[tuple[str, str]], dict[str, str]]:
    """Re-index `upsert` from the files under root and drop `removed`; skipped files are dropped
    too. Returns the write's stats, the skipped (path, reason) and the front matter owners of
    the documents read."""
    docs, skipped = read_documents(root, upsert, config)
    gone = sorted(set(removed) | {path for path, _ in skipped})
    return write(store, embedder, config, docs, provenance, gone), skipped, front_matter_of(docs)


def reconcile(
    store: Index, embedder: Embedder, config: RagConfig, root: Path,
    provenance: dict[str, Provenance], rebuild: bool,
) -> Applied:
    """Bring the index to exactly the readable files under root. Files whose content hash and
    last commit match the index are left alone; `rebuild` rewrites every row (settings that shape
    rows changed) — still without embedding text the cache has."""
    d = config.docs
    docs, skipped = d.read_folder(root)
    skipped += too_long_for_checkout(root, d.include, d.exclude)
    indexed = store.doc_columns("doc_hash", "commit", "commit_date")
    result = Applied(skipped=skipped, owners=front_matter_of(docs))
    changed = []
    for doc in docs:
        prov = provenance.get(doc.path, Provenance())
        state = indexed.get(doc.path)
        if state is None:
            result.added += 1
        elif state != (doc.content_hash, prov.commit, prov.commit_date):
            result.modified += 1
        else:
            result.unchanged += 1
            if not rebuild:
                continue
        changed.append(doc)
    present = {doc.path for doc in docs}
    gone = sorted(path for path in indexed if path not in present)
    result.deleted = len(set(gone) - {path for path, _ in skipped})  # a skipped file counts as skipped only
    result.stats = write(store, embedder, config, changed, provenance, gone, full=rebuild)
    return result


def too_long_for_checkout(root: Path, include: Sequence[str], exclude: Sequence[str]) -> list[tuple[str, str]]:
    """(path, reason) of the files in scope that git tracks under root with a path too long for the
    file system: no checkout can write them, so a scan of the folder does not see them."""
    try:
        tracked = list(git_records(root, "ls-files", "-z"))
    except GitError:  # not in a git work tree
        return []
    return [(shown_path(rel), reason) for rel in tracked
            if in_scope(rel, include, exclude) and (reason := too_long(root / rel))]
