"""Will the bot answer anyone, and with links? What `sync`, `index` and `doctor` say before silence.

Documents without front matter are `DOCSBOT_DEFAULT_LEVEL` (`restricted` unless set) and a member
the access file names nowhere is `public`, so a real repository without front matter synced fine
and then answered nobody, with nothing saying why (issue 24). Here: how many documents a member
can read, the settings that change it, and the repository's web address for citation links,
derived from the git remote where the host's URL scheme is known.
"""
from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from foundation.links import links_of, web_from_remote  # noqa: F401 (doctor's, from here)
from rag import Level

if TYPE_CHECKING:
    from foundation.settings import Settings
    from rag import Index

@dataclass(frozen=True)
class Readable:
    """Of `total` indexed documents, `readable` are at or below `level`."""

    level: Level
    readable: int
    total: int

    def line(self) -> str:
        return (f"{self.readable} of {self.total} documents readable at `{self.level.name}`, the level of "
                "a workspace member the access file does not name")


def member_level(settings: Settings) -> Level:
    """The level of a full member matched by nothing in the access file: its `[defaults] member`,
    `public` without one (an access file that cannot be read is `doctor`'s to report)."""
    if not settings.access_file:
        return Level.public
    from bot.access import AccessFileError, load_access

    try:
        return load_access(settings.access_file).member_default
    except (AccessFileError, OSError):
        return Level.public


def readable_documents(store: Index, level: Level) -> Readable:
    """Count the documents of the index readable at `level`."""
    return readable_of(Counter(values[0] for values in store.doc_columns("access_rank").values()), level)


def readable_of(ranks: Mapping[int, int], level: Level) -> Readable:
    """Of documents counted by access rank, those readable at `level`."""
    return Readable(level, sum(n for rank, n in ranks.items() if rank <= level), sum(ranks.values()))


def readable_fix(settings: Settings) -> str:
    """What to change when a member can read nothing."""
    return (f"documents without `access:` in their front matter are DOCSBOT_DEFAULT_LEVEL "
            f"(`{settings.default_level.name}`): set DOCSBOT_DEFAULT_LEVEL=public (or team) and sync again, "
            "give documents `access: public` in their front matter, or raise `[defaults] member` in the access "
            "file (DOCSBOT_ACCESS_FILE); from a terminal, `docsbot ask --level restricted` reads everything")


def say_readable(settings: Settings, as_json: bool, ranks: Mapping[int, int] | None = None) -> None:
    """After `docsbot sync` or `docsbot index`: how many documents a member can read (not under
    --json, whose stdout is the report alone) and, when none, a warning naming the fix (stderr).
    `ranks`: the documents by access rank, known without opening the index (sync/unchanged.py)."""
    if ranks is None:
        from foundation.wiring import index_config
        from rag import open_index

        found = readable_documents(open_index(index_config(settings)), member_level(settings))
    else:
        found = readable_of(ranks, member_level(settings))
    if not as_json:
        print(found.line())
    if found.total and not found.readable:
        print(f"warning: nobody in Slack gets an answer: {readable_fix(settings)}", file=sys.stderr)


# -- citation links ------------------------------------------------------------------------------
def remote_of(settings: Settings) -> str | None:
    """The docs repository's remote URL: DOCSBOT_REPO when it is one, else the `origin` of the
    local repository (DOCSBOT_REPO as a path, or the git work tree holding DOCSBOT_DOCS_DIR)."""
    from sync.gitcmd import GitError, git, toplevel
    from sync.workcopy import is_local_uri

    repo = settings.repo.get_secret_value() if settings.repo else ""
    if repo and not is_local_uri(repo):
        return repo
    folder = Path(repo or settings.docs_dir)
    top = toplevel(folder) if folder.is_dir() else None
    if top is None:
        return None
    try:
        return git(top, "remote", "get-url", "origin").strip() or None
    except GitError:
        return None
