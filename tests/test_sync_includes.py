"""A file that includes another (an Antora partial, a MkDocs snippet) is re-read when only the
included file changes, and nothing else is; the partial itself is never a page."""
from __future__ import annotations

from pathlib import Path

from foundation.wiring import sync_config
from eval.repos import commit_files, index_rows
from rag.embeddings import LocalMiniLM
from sync.service import run_sync
from tests.support.sync import new_repo, sync_settings

FONT = """= Fonts
:page-component: pdf

== Font files

include::partial$font-note.adoc[]

Declare each font in the theme's `font_catalog`.
"""
NOTE = "NOTE: Fonts must be TrueType files (`.ttf`).\n"
ROLES = "= Roles\n\n== Custom roles\n\nA role styles a span of text with the theme's settings.\n"
SNIPPET_PAGE = "# Timeouts\n\n## Defaults\n\n--8<-- \"snippets/timeout.md\"\n"
SNIPPET = "The default timeout is 5 seconds.\n"
FILES = {
    "antora.yml": "name: pdf\nversion: ~\n",
    "modules/theme/pages/font.adoc": FONT,
    "modules/theme/partials/font-note.adoc": NOTE,
    "modules/theme/pages/roles.adoc": ROLES,
    "guide/timeouts.md": SNIPPET_PAGE,
    "snippets/timeout.md": SNIPPET,
}


def texts(settings: object, doc: str) -> str:
    return "\n".join(r["text"] for r in index_rows(settings.data_dir) if r["doc_path"] == doc)  # type: ignore[attr-defined]


def test_a_changed_partial_rereads_the_pages_that_include_it_and_nothing_else(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    commit_files(source, FILES)
    first = run_sync(sync_config(settings), embedder)
    docs = {r["doc_path"] for r in index_rows(settings.data_dir)}
    assert "modules/theme/partials/font-note.adoc" not in docs  # a partial is not a page
    assert {"modules/theme/pages/font.adoc", "modules/theme/pages/roles.adoc", "guide/timeouts.md"} <= docs
    assert first.skipped == []
    assert "TrueType" in texts(settings, "modules/theme/pages/font.adoc")

    commit_files(source, {"modules/theme/partials/font-note.adoc": "NOTE: Fonts must be OpenType or TrueType files.\n",
                          "snippets/timeout.md": "The default timeout is 10 seconds.\n"})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.modified, report.added, report.deleted) == ("incremental", 3, 0, 0)
    assert "OpenType" in texts(settings, "modules/theme/pages/font.adoc")
    assert "10 seconds" in texts(settings, "guide/timeouts.md")
    # font.adoc and timeouts.md for their includes, snippets/timeout.md (a page too) for itself;
    # roles.adoc is not read again.
    assert report.unchanged == 1
