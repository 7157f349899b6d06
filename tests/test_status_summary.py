"""`docsbot status` reads the index's summary when it is current, so that it starts without
LanceDB (issue 24 item 4), and reads the index itself when the summary is missing, unreadable or
older than the index: it never shows counts the index does not have."""
import json
import subprocess
import sys
from pathlib import Path

from rag import read_summary
from rag.store.search import Store
from tests.support.cli import docsbot

PAGES = {"install.md": "# Install\n\nRun `pip install tool`.\n", "upgrade.md": "# Upgrade\n\nStop it, then upgrade.\n"}
# The status a process prints, and whether it loaded LanceDB (or Alembic) to get it.
PROBE = ("import json, sys\nfrom commands.cli import load_settings\nfrom foundation.wiring import sync_config\n"
         "from sync.status import load_status\nstatus = load_status(sync_config(load_settings()))\n"
         "print(json.dumps({'status': status, 'lancedb': 'lancedb' in sys.modules, "
         "'alembic': 'alembic' in sys.modules}))")


def synced(tmp_path: Path) -> dict[str, str]:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_DOCS_DIR": str(docs)}
    done = docsbot("sync", env=env)
    assert done.returncode == 0, done.stderr
    return env


def probe(env: dict[str, str]) -> dict:
    import os

    done = subprocess.run([sys.executable, "-c", PROBE], env={**os.environ, **env}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_status_after_a_sync_comes_from_the_summary_without_lancedb_or_alembic(tmp_path: Path):
    env = synced(tmp_path)
    summary, why = read_summary(env["DOCSBOT_DATA_DIR"])
    assert summary is not None and why == "" and (summary.documents, summary.chunks) == (2, 2)
    seen = probe(env)
    assert not seen["lancedb"] and not seen["alembic"], seen
    assert (seen["status"]["documents"], seen["status"]["chunks"]) == (2, 2)
    assert seen["status"]["last_sync"]["ok"]


def test_a_summary_older_than_the_index_is_not_believed(tmp_path: Path):
    env = synced(tmp_path)
    index = env["DOCSBOT_DATA_DIR"]
    written = json.loads((Path(index) / "summary.json").read_text())
    store = Store(index)
    store.chunks().delete("doc_path = 'upgrade.md'")  # a commit the summary does not know of
    (Path(index) / "summary.json").write_text(json.dumps(written))  # as an older writer would leave it
    assert read_summary(index) == (None, "older than the index")
    seen = probe(env)
    assert seen["lancedb"] and (seen["status"]["documents"], seen["status"]["chunks"]) == (1, 1), seen


def test_a_data_file_gone_since_the_summary_is_an_unreadable_index_not_a_current_summary(tmp_path: Path):
    env = synced(tmp_path)
    for file in (Path(env["DOCSBOT_DATA_DIR"]) / "chunks.lance" / "data").glob("*.lance"):
        file.unlink()
    assert read_summary(env["DOCSBOT_DATA_DIR"]) == (None, "older than the index")
    status = docsbot("status", "--json", env=env)
    assert status.returncode == 2 and json.loads(status.stdout)["index_error"], status.stdout


def test_an_unreadable_or_missing_summary_falls_back_to_the_index(tmp_path: Path):
    env = synced(tmp_path)
    index = Path(env["DOCSBOT_DATA_DIR"])
    (index / "summary.json").write_text("{not json")
    assert read_summary(str(index)) == (None, "unreadable")
    assert probe(env)["status"]["documents"] == 2
    (index / "summary.json").unlink()
    assert read_summary(str(index)) == (None, "missing")
    status = docsbot("status", "--json", env=env)
    assert status.returncode == 0 and json.loads(status.stdout)["documents"] == 2


def test_an_index_folder_with_no_tables_is_empty_without_a_summary(tmp_path: Path):
    summary, why = read_summary(str(tmp_path / "nowhere"))
    assert summary is not None and (summary.documents, summary.chunks, summary.commit) == (0, 0, None) and why == ""
