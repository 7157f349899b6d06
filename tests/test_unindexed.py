"""A sync that indexes nothing because the include globs leave the docs out says which pages and
which setting (issue: a Sphinx or Antora tree synced with `DOCSBOT_INCLUDE=**/*.md`)."""
from pathlib import Path

from eval.repos import run_git
from rag.unindexed import left_out_pages
from tests.support.cli import docsbot
from tests.support.sync import new_repo

RST = "Install\n=======\n\nRun ``pip install tool`` to install the tool.\n"
ADOC = "= Upgrade\n\n== Steps\n\nStop the service, then upgrade the package.\n"


def sphinx_tree(root: Path) -> Path:
    (root / "source" / "guide").mkdir(parents=True)
    (root / "source" / "index.rst").write_text(RST)
    (root / "source" / "guide" / "upgrade.rst").write_text(RST.replace("Install", "Upgrade"))
    (root / "modules" / "ROOT" / "pages").mkdir(parents=True)
    (root / "modules" / "ROOT" / "pages" / "upgrade.adoc").write_text(ADOC)
    (root / "modules" / "ROOT" / "partials").mkdir(parents=True)
    (root / "modules" / "ROOT" / "partials" / "note.adoc").write_text("A partial, not a page.\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "secret.rst").write_text(RST)
    (root / "conf.py").write_text("project = 'tool'\n")
    return root


def test_left_out_pages_counts_known_formats_the_globs_do_not_take(tmp_path: Path):
    root = sphinx_tree(tmp_path / "docs")
    found = left_out_pages(root, ["**/*.md"], [])
    assert found is not None
    assert found.by_suffix == {".rst": 2, ".adoc": 1}  # not the partial, the hidden file or conf.py
    assert found.example == "modules/ROOT/pages/upgrade.adoc"
    assert "2 .rst, 1 .adoc" in found.warning() and "DOCSBOT_INCLUDE" in found.warning()
    assert left_out_pages(root, ["**/*.rst", "**/*.adoc"], []) is None
    assert left_out_pages(root, ["**/*"], ["source/**"]).by_suffix == {".rst": 2}  # type: ignore[union-attr]


def test_a_git_sync_that_indexes_nothing_names_the_pages_and_the_setting(tmp_path: Path):
    repo = sphinx_tree(new_repo(tmp_path / "repo"))
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-qm", "docs")
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_REPO": str(repo), "DOCSBOT_INCLUDE": '["**/*.md"]'}
    narrow = docsbot("sync", env=env)
    assert narrow.returncode == 0, narrow.stderr
    said = narrow.stdout.splitlines() + narrow.stderr.splitlines()
    warning = [line for line in said if "DOCSBOT_INCLUDE" in line and "warning" in line]
    assert len(warning) == 1 and "2 .rst, 1 .adoc" in warning[0], narrow.stdout + narrow.stderr
    assert any(line.startswith("not indexed: 3 files: pages of a format") for line in said)  # and counted, by reason
    default = docsbot("sync", env={k: v for k, v in env.items() if k != "DOCSBOT_INCLUDE"})
    assert default.returncode == 0, default.stderr
    assert "DOCSBOT_INCLUDE" not in default.stdout + default.stderr
    assert "3 added" in default.stdout + default.stderr


def test_a_folder_sync_says_so_too_and_an_empty_folder_stays_quiet(tmp_path: Path):
    docs = sphinx_tree(tmp_path / "docs")
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_DOCS_DIR": str(docs), "DOCSBOT_INCLUDE": '["**/*.md"]'}
    narrow = docsbot("sync", env=env)
    assert narrow.returncode == 0, narrow.stderr
    assert "2 .rst, 1 .adoc" in narrow.stdout + narrow.stderr
    (tmp_path / "empty").mkdir()
    empty = docsbot("sync", env={**env, "DOCSBOT_DATA_DIR": str(tmp_path / "index2"),
                                 "DOCSBOT_DOCS_DIR": str(tmp_path / "empty")})
    assert empty.returncode == 0 and "DOCSBOT_INCLUDE" not in empty.stdout + empty.stderr


def test_docsbot_index_of_a_folder_the_globs_leave_out_names_them(tmp_path: Path):
    docs = sphinx_tree(tmp_path / "docs")
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_INCLUDE": '["**/*.md"]'}
    done = docsbot("index", "--docs", str(docs), env=env)
    assert done.returncode == 0, done.stderr
    assert "warning: the docs folder holds pages docsbot reads" in done.stdout and "2 .rst, 1 .adoc" in done.stdout
