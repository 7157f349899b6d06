"""Docs the include globs leave out: what a sync that indexed nothing tells its user.

A Sphinx or Antora tree synced with `DOCSBOT_INCLUDE=docs/**/*.md` indexes nothing, and "no
documents were indexed" alone sends the user looking at the wrong thing (the folder, the repo).
When the tree holds pages of a format docsbot reads that the globs do not take, the warning
names them: how many of each suffix and one example path, and the setting to change.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Sequence

from rag.paths import matches
from rag.formats.registry import format_for, suffixes

MAX_FOLDERS = 5_000  # a huge tree is not walked to its end for a hint


@dataclass(frozen=True)
class LeftOut:
    """Pages of known formats that the include/exclude globs leave out."""

    by_suffix: dict[str, int]
    example: str

    def warning(self) -> str:
        counts = ", ".join(f"{n} {suffix}" for suffix, n in sorted(self.by_suffix.items(), key=lambda kv: -kv[1]))
        return (f"the docs folder holds pages docsbot reads that DOCSBOT_INCLUDE/DOCSBOT_EXCLUDE leave out "
                f"({counts}; e.g. {self.example}): add their globs to DOCSBOT_INCLUDE (the default takes "
                f"every known format)")


def left_out_pages(root: Path, include: Sequence[str], exclude: Sequence[str]) -> LeftOut | None:
    """The known-format pages under `root` (hidden files and folders and links not entered) that
    the globs leave out; None when there are none. Pages the globs take but that were skipped for
    a reason of their own (bad front matter, too large) are not counted: the sync lists those."""
    known = set(suffixes())
    found: Counter[str] = Counter()
    example = ""
    for seen, (folder, subfolders, files) in enumerate(os.walk(root)):
        if seen > MAX_FOLDERS:
            break
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and not (Path(folder) / d).is_symlink())
        for name in sorted(files):
            rel = (Path(folder) / name).relative_to(root).as_posix()
            suffix = PurePosixPath(name).suffix.lower()
            if (name.startswith(".") or suffix not in known or not format_for(rel).is_page(rel)
                    or matches(rel, include, exclude)):
                continue
            found[suffix] += 1
            example = example or rel
    return LeftOut(dict(found), example) if found else None
