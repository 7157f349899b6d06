"""`docsbot doctor`'s count of the files under the docs root that are not indexed, by reason
(rag/unindexed.py): a warning when pages of a format docsbot reads are left out by the globs,
else an ok line that still names what is not indexed and why."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from commands.doctor_finding import Finding
from foundation.links import docs_root
from rag.unindexed import PAGE_LEFT_OUT, unindexed_files

if TYPE_CHECKING:
    from foundation.settings import Settings

SHOWN = 4  # reasons in the detail line; the rest are summed


def unindexed_checks(settings: Settings) -> list[Finding]:
    root = docs_root(settings)
    if not root or not Path(root).is_dir():
        return []
    found = unindexed_files(Path(root), settings.include, settings.exclude)
    if not found.by_reason:
        return [Finding("unindexed files", "ok", f"every file under {root} is indexed")]
    lines = found.lines()
    rest = sum(n for n, _ in sorted(found.by_reason.values(), reverse=True)[SHOWN:])
    detail = "; ".join(lines[:SHOWN]) + (f"; {rest} more in other groups" if rest else "")
    if PAGE_LEFT_OUT in found.by_reason:
        return [Finding("unindexed files", "warning", detail,
                        "add the globs of those pages to DOCSBOT_INCLUDE (the default takes every known format)")]
    return [Finding("unindexed files", "ok", detail)]
