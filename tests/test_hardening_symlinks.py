"""Nothing outside the docs repository is ever indexed or quoted: symbolic links (absolute and
relative, to files and folders) are skipped with the reason `symlink` in folder and git mode,
patterns cannot point outside, and hidden folders are reported instead of silently dropped."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from commands.cli import main
from eval.repos import commit_files, index_rows
from rag.documents import AccessRules, DocumentError, load_folder, read_document
from rag.paths import HIDDEN, SYMLINK
from rag.levels import Level
from tests.support.sync import new_repo

SECRET = "SLACK_SIGNING_SECRET=hunter2-outside-the-repo"
DOC = "---\ntitle: Deploys\naccess: public\n---\n# Deploys\n\nDeploys to production are frozen on Fridays.\n"
RULES = AccessRules({}, Level.public)


def outside_files(tmp: Path) -> Path:
    """A host folder with a secret, next to (not inside) the docs."""
    host = tmp / "host"
    (host / "private").mkdir(parents=True)
    (host / ".env").write_text(SECRET + "\n")
    (host / "private" / "notes.md").write_text(f"# Notes\n\n{SECRET}\n")
    return host


def add_links(docs: Path, host: Path) -> dict[str, str]:
    """Links a docs repo may carry: absolute, relative, to a folder, and one inside the repo."""
    links = {
        "public/faq.md": os.path.relpath(host / ".env", docs / "public"),  # ../../host/.env
        "escape.md": str(host / ".env"),  # absolute
        "linked-folder": str(host / "private"),  # a folder outside
        "alias.md": "deploy.md",  # inside the repo: still not followed
    }
    for rel, target in links.items():
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).symlink_to(target)
    return links


def assert_nothing_outside(data_dir: Path) -> None:
    rows = index_rows(data_dir)
    assert {row["doc_path"] for row in rows} == {"deploy.md"}
    assert not any("hunter2" in row["text"] for row in rows)


def test_folder_index_skips_every_link(tmp_path: Path) -> None:
    host = outside_files(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text(DOC)
    links = add_links(docs, host)
    found, skipped = load_folder(docs, ["**/*.md", "**/*"], [], RULES, 10_000)
    assert [d.path for d in found] == ["deploy.md"]
    assert dict(skipped) == {rel: SYMLINK for rel in links}


def test_read_document_refuses_links_and_escapes(tmp_path: Path) -> None:
    host = outside_files(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    add_links(docs, host)
    for rel in ("public/faq.md", "escape.md", "linked-folder/notes.md", "alias.md"):
        with pytest.raises(DocumentError, match=f"^{SYMLINK}$"):
            read_document(docs, rel, RULES, 10_000)
    for rel in ("../host/.env", "/etc/passwd", "a/../../host/.env"):
        with pytest.raises(DocumentError, match="outside the docs folder"):
            read_document(docs, rel, RULES, 10_000)


def test_hidden_and_dot_dot_folders_are_reported(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    for rel in ("deploy.md", "..archive/old.md", ".github/guide.md", ".hidden.md", ".git/HEAD.md"):
        (docs / rel).parent.mkdir(parents=True, exist_ok=True)
        (docs / rel).write_text(DOC)
    found, skipped = load_folder(docs, ["**/*.md"], [], RULES, 10_000)
    assert [d.path for d in found] == ["deploy.md"]
    assert sorted(path for path, _ in skipped) == ["..archive/", ".github/", ".hidden.md"]


def test_git_sync_lists_links_as_skipped_and_indexes_nothing_outside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host = outside_files(tmp_path)
    source = new_repo(tmp_path / "upstream")
    commit_files(source, {"deploy.md": DOC})
    links = add_links(source, host)
    commit_files(source, {}, "links")
    monkeypatch.setenv("DOCSBOT_DATA_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("DOCSBOT_INCLUDE", '["**/*.md", "**/*"]')
    monkeypatch.setenv("DOCSBOT_DEFAULT_LEVEL", "public")
    assert main(["sync", "--repo", str(source), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {rel: SYMLINK for rel in links}
    assert report["added"] == 1
    assert_nothing_outside(tmp_path / "index")

    # Incremental: a link added later (git diff names it) is skipped too, and counted only as skipped.
    (source / "later.md").symlink_to(host / ".env")
    commit_files(source, {".github/guide.md": DOC}, "one more link, and a hidden file")
    assert main(["sync", "--repo", str(source), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["mode"] == "incremental"
    assert report["skipped"] == [{"path": ".github/guide.md", "reason": HIDDEN},
                                 {"path": "later.md", "reason": SYMLINK}]
    assert (report["added"], report["modified"]) == (0, 0)
    assert_nothing_outside(tmp_path / "index")

    # And nothing is quoted: the question that matches the secret finds no source.
    assert main(["ask", "what is the slack signing secret hunter2", "--json"]) == 1  # declined
    out = capsys.readouterr().out
    assert "hunter2" not in out and json.loads(out)["answered"] is False


def test_a_docs_subfolder_that_is_a_link_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    host = outside_files(tmp_path)
    source = new_repo(tmp_path / "upstream")
    (source / "docs").symlink_to(host / "private")
    commit_files(source, {"README.md": DOC}, "docs is a link")
    monkeypatch.setenv("DOCSBOT_DATA_DIR", str(tmp_path / "index"))
    monkeypatch.setenv("DOCSBOT_REPO_SUBDIR", "docs")
    assert main(["sync", "--repo", str(source)]) == 2
    assert "DOCSBOT_REPO_SUBDIR=docs: a symbolic link" in capsys.readouterr().err
    assert not (tmp_path / "index" / "chunks.lance").exists()
