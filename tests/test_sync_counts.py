"""One count of documents everywhere: a file with no text to index (empty, a title alone, front
matter alone) gives no chunk, so it is no document of the index. It is skipped with its reason,
never counted as added, and a second sync of the same files adds nothing (issue 36 item 5: a first
sync said "N+1 added" then "N of N documents readable"; a sync with no change said "1 added")."""
from __future__ import annotations

from pathlib import Path

from commands.readiness import readable_documents
from foundation.wiring import sync_config
from eval.repos import commit_files
from rag.embeddings import LocalMiniLM
from rag.levels import Level
from rag.store.search import Store
from sync.service import run_sync
from tests.support.sync import new_repo, sync_settings

FILES = {
    "guide.md": "# Guide\n\nDeploys need a green build and one approval.\n",
    "oncall.md": "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n",
    "empty.md": "",
    "coming-soon.md": "# Coming soon\n",
    "section/_index.md": "---\ntitle: Operations\nweight: 3\n---\n",
}
NO_TEXT = ["coming-soon.md", "empty.md", "section/_index.md"]


def documents(data_dir: str) -> tuple[int, int]:
    """(documents the index counts, documents `docsbot sync` says are readable out of)."""
    store = Store(data_dir)
    return store.counts()["documents"], readable_documents(store, Level.team).total


def test_a_first_sync_adds_as_many_documents_as_the_index_holds(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    commit_files(source, FILES)
    settings = sync_settings(tmp_path, source)
    first = run_sync(sync_config(settings), embedder)
    assert (first.added, *documents(settings.data_dir)) == (2, 2, 2)
    assert sorted(path for path, _ in first.skipped) == NO_TEXT
    assert all("no text to index" in reason for _, reason in first.skipped)
    commit_files(source, {"guide.md": FILES["guide.md"] + "\nRollbacks need none.\n"})
    second = run_sync(sync_config(settings), embedder)
    assert (second.mode, second.added, second.modified, second.unchanged) == ("incremental", 0, 1, 1)


def test_a_sync_of_unchanged_files_adds_nothing(tmp_path: Path, embedder: LocalMiniLM) -> None:
    folder = tmp_path / "docs"  # a folder outside git: every sync reconciles the files with the index
    for rel, text in FILES.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    settings = sync_settings(tmp_path, folder)
    first = run_sync(sync_config(settings), embedder)
    again = run_sync(sync_config(settings), embedder)
    assert (first.added, first.unchanged) == (2, 0)
    assert (again.added, again.modified, again.unchanged, again.chunks_embedded) == (0, 0, 2, 0)
    assert documents(settings.data_dir) == (2, 2)


def test_a_sync_counts_the_files_it_leaves_out_by_reason(tmp_path: Path, embedder: LocalMiniLM) -> None:
    """Nothing under the docs root is left out without a word (issue 38 item 2): the sync summary
    names the files the globs do not take, by reason, as `docsbot index` and `status` do."""
    source = new_repo(tmp_path / "upstream")
    commit_files(source, {**FILES, "diagram.png": "not an image", "source/_partials/footer.erb": "<p>x</p>\n"})
    report = run_sync(sync_config(sync_settings(tmp_path, source)), embedder)
    shown = report.render()
    assert any(line.startswith("not indexed: 1 file: ") and "diagram.png" in line for line in shown.splitlines()), shown
    assert report.to_json()["unindexed"] == report.unindexed and len(report.unindexed) >= 1
