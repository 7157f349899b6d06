"""Hostile files in a docs source: a name too long for the file system (git holds it, no checkout
can write it), a YAML alias bomb and other front matter of the wrong type, names with a newline,
a quote, a backslash or a tab, a Git LFS pointer, a FIFO. Each is skipped with one short reason
(or, for odd names, indexed with its commit, date and link), and the rest of the commit applies."""
from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest

from foundation.wiring import sync_config
from eval.repos import GIT_USER, commit_files, index_rows, run_git
from rag.documents import REASON_MAX, AccessRules, DocumentError, load_folder, parse_document, read_document
from rag.paths import NAME_MAX, PATH_MAX, scan_folder
from rag.embeddings import LocalMiniLM
from rag.levels import Level
from rag.store.search import Store
from sync.service import run_sync
from tests.support.sync import new_repo, sync_settings

RULES = AccessRules({}, Level.public)
DEPLOY = "# Deploy Policy\n\nDeploys to production are frozen on Fridays after 14:00.\n"
ONCALL = "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n"
LONG_NAME = "policies/odd [x] *" + "a" * (NAME_MAX + 20) + "\n.md"  # special to a sparse pattern, too
DEEP_PATH = "/".join(["d" * 250] * 17) + "/deep.md"  # every part fits, the path does not (PATH_MAX)
ODD_NAMES = ["new\nline.md", 'quote".md', "back\\slash.md", "tab\there.md"]
LFS_POINTER = (
    "version https://git-lfs.github.com/spec/v1\n"
    "oid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
)


def alias_bomb(depth: int = 7, width: int = 9) -> str:
    """The "billion laughs" in front matter: under 400 bytes, `width ** depth` strings expanded."""
    lines = [f"a0: &a0 [{', '.join(['lol'] * width)}]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, depth)]
    return "---\n" + "\n".join(lines) + f"\naccess: *a{depth - 1}\n---\n# Bomb\n\nText.\n"


def commit_blobs(repo: Path, files: dict[str, str | None], message: str = "docs") -> str:
    """Commit through the index alone (`git update-index`), so that a path no file system can
    hold can be committed as any git server would receive it; None deletes. The commit id."""
    for path, content in files.items():
        if content is None:
            run_git(repo, "update-index", "--force-remove", "--", path)
            continue
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, input=content.encode(),
                              capture_output=True, check=True).stdout.decode().strip()
        run_git(repo, "update-index", "--add", "--cacheinfo", "100644", blob, path)
    subprocess.run(["git", *GIT_USER, "commit", "-q", "--allow-empty", "-m", message], cwd=repo, check=True)
    return run_git(repo, "rev-parse", "HEAD")


def indexed_text(settings, path: str) -> str:
    return "\n".join(row["text"] for row in index_rows(settings.data_dir) if row["doc_path"] == path)


def test_names_too_long_for_the_file_system_are_skipped_and_never_block_a_sync(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    commit_blobs(source, {"policies/deploy.md": DEPLOY, "ops/oncall.md": ONCALL})
    assert run_sync(sync_config(settings), embedder).added == 2

    # Both kinds arrive with an edit: the checkout leaves them out, the edit applies.
    c2 = commit_blobs(source, {LONG_NAME: DEPLOY, DEEP_PATH: ONCALL,
                               "policies/deploy.md": DEPLOY.replace("14:00", "12:00")})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.added, report.modified) == ("incremental", 0, 1)
    assert dict(report.skipped) == {
        LONG_NAME: f"file name too long (a part of the path is over {NAME_MAX} bytes)",
        DEEP_PATH: f"path too long (over {PATH_MAX - 1} bytes)",
    }
    assert "12:00" in indexed_text(settings, "policies/deploy.md")
    assert Store(settings.data_dir).meta()["commit"] == c2

    # A fresh index of the same commit (a reconcile scans the work tree) reports them too.
    fresh = sync_settings(tmp_path / "fresh", source)
    report = run_sync(sync_config(fresh), embedder)
    assert report.mode == "reconcile" and {path for path, _ in report.skipped} == {LONG_NAME, DEEP_PATH}
    assert {row["doc_path"] for row in index_rows(fresh.data_dir)} == {"policies/deploy.md", "ops/oncall.md"}

    # Deleted upstream, one of them after one more commit that adds and deletes another
    # between two syncs (a path `git log` names that is in no checkout): every sync goes on.
    commit_blobs(source, {LONG_NAME: None, LONG_NAME.replace("odd", "odder"): DEPLOY})
    c4 = commit_blobs(source, {DEEP_PATH: None, LONG_NAME.replace("odd", "odder"): None,
                               "ops/oncall.md": ONCALL.replace("15 minutes", "10 minutes")})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.modified, report.deleted, report.skipped) == ("incremental", 1, 2, [])
    assert "10 minutes" in indexed_text(settings, "ops/oncall.md")
    assert Store(settings.data_dir).meta()["commit"] == c4
    assert run_sync(sync_config(settings), embedder).mode == "unchanged"


def test_an_alias_bomb_in_front_matter_is_refused_at_once() -> None:
    started = time.perf_counter()
    with pytest.raises(DocumentError, match=r"^front matter uses a YAML anchor or alias at line 2 \(not allowed\)$"):
        parse_document("bomb.md", alias_bomb().encode(), RULES, 10_000)
    assert time.perf_counter() - started < 1
    with pytest.raises(DocumentError, match="anchor or alias"):
        parse_document("anchor.md", b"---\ntitle: &t Deploys\n---\ntext", RULES, 10_000)


@pytest.mark.parametrize(
    ("front_matter", "reason"),
    [
        ("access: [public]", "front matter 'access' must be text, not a list"),
        ("access: {level: public}", "front matter 'access' must be text, not a mapping"),
        ("access: 0", "front matter 'access' must be text, not int"),
        ("access:", "front matter 'access' must be text, not empty"),
        ("title: !!binary aGVsbG8=", "front matter 'title' must be text, not bytes"),
        ("owner: !!set {a, b}", "front matter 'owner' must be text, not set"),
        ("title: " + "[" * 5000 + "]" * 5000, "front matter is nested too deeply"),
    ],
)
def test_front_matter_values_are_checked_by_type(front_matter: str, reason: str) -> None:
    with pytest.raises(DocumentError) as caught:
        parse_document("x.md", f"---\n{front_matter}\n---\ntext".encode(), RULES, 100_000)
    assert str(caught.value) == reason


def test_every_reason_is_short() -> None:
    with pytest.raises(DocumentError) as caught:
        parse_document("x.md", f"---\naccess: {'x' * 50_000}\n---\ntext".encode(), RULES, 100_000)
    assert str(caught.value).startswith("front matter unknown access level 'xxx")
    assert len(str(caught.value)) == REASON_MAX and str(caught.value).endswith("…")


def test_a_folder_sync_skips_a_bomb_an_lfs_pointer_and_a_fifo_with_one_short_reason_each(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text(DEPLOY)
    (docs / "bomb.md").write_text(alias_bomb())
    (docs / "diagram.md").write_text(LFS_POINTER)
    os.mkfifo(docs / "pipe.md")
    settings = sync_settings(tmp_path, docs)
    report = run_sync(sync_config(settings), embedder)
    reasons = dict(report.skipped)
    assert set(reasons) == {"bomb.md", "diagram.md", "pipe.md"}
    assert "anchor or alias" in reasons["bomb.md"]
    assert "Git LFS" in reasons["diagram.md"]
    assert reasons["pipe.md"] == "not a regular file"
    assert {row["doc_path"] for row in index_rows(settings.data_dir)} == {"deploy.md"}
    assert len(json.dumps(report.to_json())) < 2_000


def test_a_fifo_is_never_opened_for_reading(tmp_path: Path) -> None:
    """Opening a FIFO waits for a writer: a read must not, whoever asks for the path."""
    os.mkfifo(tmp_path / "pipe.md")
    outcome: list[str] = []

    def read() -> None:
        try:
            read_document(tmp_path, "pipe.md", RULES, 10_000)
        except DocumentError as exc:
            outcome.append(str(exc))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(5)
    blocked = reader.is_alive()
    if blocked:  # waiting in open(): a writer lets it go before the test fails
        os.close(os.open(tmp_path / "pipe.md", os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
    assert (blocked, outcome) == (False, ["not a regular file"])


def test_a_folder_too_deep_to_list_is_reported(tmp_path: Path) -> None:
    """A tree deeper than PATH_MAX can exist on disk (made with relative paths); its files
    cannot be opened by their full path, and the scan says so instead of failing or going quiet."""
    (tmp_path / "top.md").write_text(DEPLOY)
    parent = os.open(tmp_path, os.O_RDONLY)
    for _ in range(17):
        os.mkdir("d" * 250, dir_fd=parent)
        child = os.open("d" * 250, os.O_RDONLY, dir_fd=parent)
        os.close(parent)
        parent = child
    os.close(os.open("deep.md", os.O_WRONLY | os.O_CREAT, dir_fd=parent))
    os.close(parent)
    found, skipped = scan_folder(tmp_path, ["**/*.md"], [])
    assert found == ["top.md"]
    assert [reason for _, reason in skipped] == [f"path too long (over {PATH_MAX - 1} bytes)"]
    assert load_folder(tmp_path, ["**/*.md"], [], RULES, 10_000)[1] == skipped


def test_odd_names_keep_their_commit_date_and_link(tmp_path: Path, embedder: LocalMiniLM) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    c1 = commit_files(source, {name: f"# {name}\n\nPage {i} of the odd names.\n" for i, name in enumerate(ODD_NAMES)}
                      | {"bin\nary.md": b"\x89PNG\x00\x00"})
    report = run_sync(sync_config(settings), embedder)
    assert report.added == len(ODD_NAMES) and report.skipped == [("bin\nary.md", "binary file")]
    rows = {row["doc_path"]: row for row in index_rows(settings.data_dir)}
    assert set(rows) == set(ODD_NAMES)
    assert all(row["commit"] == c1 and row["commit_date"] and row["url"] for row in rows.values())
    assert "skipped 'bin\\nary.md': binary file" in report.render().splitlines()  # one line each

    # An edit and its revert between two syncs: the newline name is re-stamped with the last commit.
    commit_files(source, {"new\nline.md": "# Edited\n"})
    c3 = commit_files(source, {"new\nline.md": f"# {ODD_NAMES[0]}\n\nPage 0 of the odd names.\n"})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.chunks_embedded) == ("incremental", 0)
    commits = {row["doc_path"]: row["commit"] for row in index_rows(settings.data_dir)}
    assert commits == {"new\nline.md": c3} | {name: c1 for name in ODD_NAMES[1:]}
