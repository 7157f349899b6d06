"""A sync of a local folder with nothing new is told from `last-sync.json` without LanceDB (issue 36
item 4), and anything that could change the index's rows makes the next sync a real one."""
from __future__ import annotations

import os
import time
from pathlib import Path

from foundation.settings import Settings
from foundation.wiring import sync_config
from eval.repos import commit_files
from rag.embeddings import LocalMiniLM
from rag.levels import Level
from rag.store.search import Store
from sync.lease import writer_lease
from sync.report import SyncReport
from sync.service import run_sync
from sync.unchanged import RECORD, LastSync, unchanged_sync
from tests.support.sync import new_repo, sync_settings

FILES = {"guide.md": "# Guide\n\nDeploys need a green build and one approval.\n",
         "public/oncall.md": "---\naccess: public\n---\n# On-call\n\nPages are answered within 15 minutes.\n",
         "coming-soon.md": "# Coming soon\n"}  # no text to index: skipped, with its reason, by every sync


def written(folder: Path, files: dict[str, str], seconds_ago: float = 60) -> Path:
    """`files` under `folder`, last modified `seconds_ago` (not the moment the sync lists them)."""
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
        when = time.time() - seconds_ago
        os.utime(folder / rel, (when, when))
    return folder


def quick(settings: Settings) -> tuple[SyncReport, LastSync] | None:
    config = sync_config(settings)
    with writer_lease(config.lease) as held:
        return unchanged_sync(config, held)


def synced(tmp_path: Path, embedder: LocalMiniLM) -> Settings:
    settings = sync_settings(tmp_path, written(tmp_path / "docs", FILES))
    run_sync(sync_config(settings), embedder)
    return settings


def test_a_second_sync_of_the_same_files_is_told_without_the_index(tmp_path: Path, embedder: LocalMiniLM) -> None:
    settings = synced(tmp_path, embedder)
    found = quick(settings)
    assert found is not None
    report, last = found
    assert (report.mode, report.added, report.modified, report.deleted, report.unchanged) == ("unchanged", 0, 0, 0, 2)
    assert last.rank_counts() == {int(Level.public): 1, int(Level.team): 1}
    assert [path for path, _ in report.skipped] == ["coming-soon.md"] and "no text" in report.skipped[0][1]


def test_an_edit_of_the_same_size_is_a_real_sync(tmp_path: Path, embedder: LocalMiniLM) -> None:
    settings = synced(tmp_path, embedder)
    guide = tmp_path / "docs" / "guide.md"
    guide.write_text(FILES["guide.md"].replace("green", "happy"))  # same length, modified now
    assert quick(settings) is None
    again = run_sync(sync_config(settings), embedder)
    assert (again.modified, again.unchanged) == (1, 1)
    assert quick(settings) is None  # modified within RACY_S of the listing: not recorded


def test_a_file_added_or_removed_is_a_real_sync(tmp_path: Path, embedder: LocalMiniLM) -> None:
    settings = synced(tmp_path, embedder)
    written(tmp_path / "docs", {"new.md": "# New\n\nA new page.\n"})
    assert quick(settings) is None
    run_sync(sync_config(settings), embedder)
    assert quick(settings) is not None
    (tmp_path / "docs" / "new.md").unlink()
    assert quick(settings) is None


def test_a_write_to_the_index_since_is_a_real_sync(tmp_path: Path, embedder: LocalMiniLM) -> None:
    settings = synced(tmp_path, embedder)
    Store(settings.data_dir).set_meta(docs_root="/elsewhere")  # as `docsbot index` of another folder does
    assert quick(settings) is None


def test_other_settings_are_a_real_sync(tmp_path: Path, embedder: LocalMiniLM) -> None:
    settings = synced(tmp_path, embedder)
    assert quick(settings.model_copy(update={"chunk_size": settings.chunk_size + 1})) is None
    assert quick(settings.model_copy(update={"default_level": "public"})) is None
    assert quick(settings) is not None


def test_a_folder_in_a_git_work_tree_is_never_taken_as_unchanged(tmp_path: Path, embedder: LocalMiniLM) -> None:
    repo = new_repo(tmp_path / "repo")
    commit_files(repo, {"docs/" + rel: text for rel, text in FILES.items()})
    settings = sync_settings(tmp_path, repo / "docs").model_copy(update={"repo": None, "docs_dir": str(repo / "docs")})
    written(repo / "docs", FILES)
    run_sync(sync_config(settings), embedder)
    assert not (Path(settings.data_dir) / RECORD).exists()
    assert quick(settings) is None


def test_a_missing_folder_is_left_to_the_sync_that_records_the_failure(tmp_path: Path) -> None:
    settings = sync_settings(tmp_path, tmp_path / "docs")
    assert quick(settings.model_copy(update={"repo": None, "docs_dir": str(tmp_path / "gone")})) is None
