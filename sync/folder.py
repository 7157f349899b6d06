"""A full index of a docs folder, with each file's last commit when the folder is in git."""
from __future__ import annotations

import logging
from pathlib import Path

from docsbot.errors import UserError
from rag.engine import Engine
from rag.indexer import IndexStats, Provenance
from rag.rebuild import rebuild_index
from sync.gitcmd import GitError, last_commits, toplevel

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
    return {path: Provenance(commit, date) for path, (commit, date) in commits.items()}


def index_folder(engine: Engine, root: Path, rebuild: bool = False) -> IndexStats:
    """Index the folder in place, or (`rebuild`) build a new index and swap it in (rag.rebuild)."""
    if not root.is_dir():
        raise UserError(f"docs folder {root} does not exist")
    provenance = folder_provenance(root)
    return rebuild_index(engine, root, provenance) if rebuild else engine.index_folder(root, provenance)


def ensure_index(engine: Engine, root: Path | None) -> IndexStats | None:
    """Index `root` when the index is missing or was built from another folder."""
    if root is None:
        return None
    indexed = engine.store.meta().get("docs_root")
    if engine.store.exists() and indexed == str(root.resolve()):
        return None
    return index_folder(engine, root)
