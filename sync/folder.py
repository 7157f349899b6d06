"""A full index of a docs folder, with each file's last commit when the folder is in git."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from rag import Engine, IndexStats, Provenance, chunking_signature, rebuild_index
from sync.config import LeaseConfig
from sync.errors import SyncError
from sync.gitcmd import GitError, git, last_commits, toplevel
from sync.lease import checked_writes, writer_lease
from sync.progress import recording

log = logging.getLogger(__name__)


def folder_provenance(root: Path) -> dict[str, Provenance]:
    """Last commit per file when the folder lives in a git work tree, else nothing."""
    top = toplevel(root)
    if top is None:
        return {}
    subdir = root.resolve().relative_to(top.resolve()).as_posix()
    try:
        commits = last_commits(top, "" if subdir == "." else subdir)
    except GitError as exc:
        log.warning("no commit information for %s: %s", root, exc)
        return {}
    edited = edited_paths(top, "" if subdir == "." else subdir)
    return {path: Provenance(commit + "+dirty" if path in edited else commit, date)
            for path, (commit, date) in commits.items()}


def edited_paths(top: Path, subdir: str) -> set[str]:
    """Files under `subdir` (relative to it) whose work-tree text differs from HEAD's: their
    last commit is not what is indexed, so it is cited with "+dirty" and without a link."""
    prefix = subdir.strip("/") + "/" if subdir.strip("/") else ""
    try:
        changed = git(top, "diff", "--no-renames", "--name-only", "-z", "HEAD", "--", prefix or ".")
    except GitError:  # no commit yet: nothing has a last commit either
        return set()
    return {path[len(prefix):] for path in changed.split("\0") if path.startswith(prefix)}


def head_commit(root: Path) -> tuple[str | None, str | None]:
    """(HEAD commit, its date) of the git work tree holding `root`, the commit suffixed "+dirty"
    when files under `root` differ from it; (None, None) outside git."""
    if toplevel(root) is None:
        return None, None
    try:
        commit, date = git(root, "show", "-s", "--format=%H %cI", "HEAD").split()
        dirty = git(root, "status", "--porcelain", "--", ".").strip()
    except (GitError, ValueError) as exc:  # ValueError: no commit yet
        log.warning("no commit information for %s: %s", root, exc)
        return None, None
    return (commit + "+dirty" if dirty else commit), date


def index_folder(engine: Engine, lease: LeaseConfig, root: Path, rebuild: bool = False) -> IndexStats:
    """A full index of `root` under the index-writer lease (SyncBusy when a live sync worker
    holds it), in place or (`rebuild`) built anew and swapped in
    (rag.rebuild), recording the commit it was read at like a sync does."""
    if not root.is_dir():
        raise SyncError(f"docs folder {root} does not exist")
    with writer_lease(lease) as held, recording(held), checked_writes(engine.store, held):
        provenance = folder_provenance(root)
        stats = rebuild_index(engine, root, provenance) if rebuild else engine.index_folder(root, provenance)
        commit, date = head_commit(root)
        engine.store.set_meta(commit=commit, commit_date=date, folder_signature=folder_signature(engine))
    return stats


def folder_signature(engine: Engine) -> dict[str, Any]:
    """What besides the folder shapes a folder's index: the chunking (and parsers, by its
    version) and which files are read. Another one means the index is built again."""
    docs = engine.config.docs
    return {"chunking": chunking_signature(engine.config.chunking), "include": list(docs.include),
            "exclude": list(docs.exclude), "drafts": docs.index_drafts}


def ensure_index(engine: Engine, lease: LeaseConfig, root: Path | None) -> IndexStats | None:
    """Index `root` when the index is missing, or was built from another folder or with other
    chunking, parsers or include globs."""
    if root is None:
        return None
    meta = engine.store.meta()
    if (engine.store.exists() and meta.get("docs_root") == str(root.resolve())
            and meta.get("folder_signature") == folder_signature(engine)):
        return None
    return index_folder(engine, lease, root)
