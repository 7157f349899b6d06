"""Files under the docs root that are not indexed, counted by reason: nothing is skipped silently.

A Sphinx or Antora tree synced with `DOCSBOT_INCLUDE=docs/**/*.md` indexes nothing, and "no
documents were indexed" alone sends the user looking at the wrong thing (the folder, the repo).
When the tree holds pages of a format docsbot reads that the globs do not take, the warning
names them: how many of each suffix and one example path, and the setting to change.

`unindexed_files` counts every file the walk sees and the index will not hold, by reason, with an
example each (`docsbot index` and `doctor` print them): pages the globs leave out, files of a
format that are no page of their own (partials, layouts: read where a page includes them), and
files no format reads (images, configuration, HTML), by suffix. Files the globs take but that
were skipped for a reason of their own (bad front matter, too large) are the sync's to list.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Iterator, Sequence

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
    for rel in _files(root):
        suffix = PurePosixPath(rel).suffix.lower()
        if suffix not in known or not format_for(rel).is_page(rel) or matches(rel, include, exclude):
            continue
        found[suffix] += 1
        example = example or rel
    return LeftOut(dict(found), example) if found else None


@dataclass(frozen=True)
class Unindexed:
    """Files not indexed: reason -> (how many, one example path)."""

    by_reason: dict[str, tuple[int, str]]

    def lines(self) -> list[str]:
        """`12 files: reason (e.g. path)`, the most frequent reason first."""
        ranked = sorted(self.by_reason.items(), key=lambda kv: (-kv[1][0], kv[0]))
        return [f"{n} file{'s' if n != 1 else ''}: {reason} (e.g. {example})" for reason, (n, example) in ranked]


PAGE_LEFT_OUT = "pages of a format docsbot reads, left out by DOCSBOT_INCLUDE/DOCSBOT_EXCLUDE: add their globs"
NOT_A_PAGE = "partials and layouts, no page of their own: read where a page includes them"


def unindexed_files(root: Path, include: Sequence[str], exclude: Sequence[str]) -> Unindexed:
    """Every file under `root` (hidden ones and links not entered) the globs do not take, by
    reason (the module docstring lists them)."""
    known = set(suffixes())
    counts: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for rel in _files(root):
        if matches(rel, include, exclude):
            continue
        suffix = PurePosixPath(rel).suffix.lower()
        if suffix not in known:
            reason = f"no format docsbot reads ({suffix or 'no suffix'})"
        elif not format_for(rel).is_page(rel):
            reason = NOT_A_PAGE
        else:
            reason = PAGE_LEFT_OUT
        counts[reason] += 1
        examples.setdefault(reason, rel)
    return Unindexed({reason: (n, examples[reason]) for reason, n in counts.items()})


def _files(root: Path) -> Iterator[str]:
    """The relative paths of the files under `root`, sorted per folder; hidden files and folders
    and linked folders not entered, at most MAX_FOLDERS folders."""
    for seen, (folder, subfolders, files) in enumerate(os.walk(root)):
        if seen > MAX_FOLDERS:
            break
        subfolders[:] = sorted(d for d in subfolders if not d.startswith(".") and not (Path(folder) / d).is_symlink())
        for name in sorted(files):
            if not name.startswith("."):
                yield (Path(folder) / name).relative_to(root).as_posix()
