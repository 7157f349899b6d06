"""`docsbot doctor` and the commands with a sources file (DOCSBOT_SOURCES): each source's fetch,
commit and last error; a bad file, or one with a credential written in it, said in one line."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from commands.doctor import run_checks
from commands.doctor_finding import Finding
from foundation.wiring import sync_config
from rag.embeddings import LocalMiniLM
from sync.service import run_sync
from tests.test_sync_sources import commit, entries, page, settings_for, three, write_sources  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent


def docsbot(command: str, tmp_path: Path, sources: Path) -> subprocess.CompletedProcess[str]:
    """`docsbot COMMAND` in a fresh interpreter, with Slack configured (so `serve` and `run` go as
    far as a real deploy does) and the sources file as its only docs setting."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    env |= {"DOCSBOT_DATA_DIR": str(tmp_path / "data"), "DOCSBOT_SOURCES": str(sources),
            "SLACK_BOT_TOKEN": "xoxb-not-used", "SLACK_SIGNING_SECRET": "not-used"}
    return subprocess.run([sys.executable, "-m", "commands.cli", command], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize("command", ["status", "sync", "serve", "run"])
def test_a_bad_sources_file_is_one_line_for_every_command(tmp_path: Path, command: str) -> None:
    sources = tmp_path / "sources.toml"
    sources.write_text('[[source]]\nname = "handbook"\nrepo = "/x"\n\n[[source]]\nname = "Ops"\nrepo = "/y"\n')
    done = docsbot(command, tmp_path, sources)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == [
        f"docsbot: error: sources file {sources}, line 5: `name` must be lower-case letters, digits, - or _ "
        "(like \"handbook\"), got 'Ops'"]


def test_doctor_refuses_a_file_with_a_literal_credential_in_one_finding(tmp_path: Path) -> None:
    sources = tmp_path / "sources.toml"
    sources.write_text('[[source]]\nname = "handbook"\nrepo = "https://bot:ghp_s3cr3t@github.com/acme/hb.git"\n')
    done = docsbot("doctor", tmp_path, sources)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "sources file" in line]
    assert line.startswith("FAILED") and "line 1 (source 'handbook'): `repo` holds a credential" in line
    assert "token_env" in line
    assert "ghp_s3cr3t" not in done.stdout + done.stderr


def by_check(findings: list[Finding]) -> dict[str, Finding]:
    return {f.check: f for f in findings}


def test_doctor_checks_each_source_fetch_commit_and_last_error(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM) -> None:  # noqa: F811
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", entries(three)))
    run_sync(sync_config(settings), embedder)
    moved = commit(three["handbook"], {"README.md": page("Handbook", "Holidays are booked in Workday.")}, "hb")
    away = three["devdocs"].rename(tmp_path / "away")  # its fetch fails from now on
    run_sync(sync_config(settings), embedder)  # devdocs fails, the rest go on
    commit(three["runbooks"], {"README.md": page("Runbooks", "Every alert links here.")}, "rb")
    found = by_check(run_checks(settings))
    assert found["sources file"].status == "ok"
    assert "3 sources (handbook, runbooks, devdocs)" in found["sources file"].detail
    handbook = found["source handbook"]
    assert handbook.status == "ok", handbook
    assert f"indexed commit {moved[:12]}, committed 0.0 days ago" in handbook.detail
    assert "2 documents, 1 readable at `public`" in handbook.detail  # README is team, benefits public
    runbooks = found["source runbooks"]
    assert runbooks.status == "warning" and "nobody in Slack gets an answer from it" in runbooks.detail
    assert "the remote is at" in runbooks.detail  # a commit since the last sync
    devdocs = found["source devdocs"]
    assert devdocs.status == "failed" and "cannot fetch" in devdocs.detail
    assert "the index serves its commit" in devdocs.detail
    assert found["source devdocs: citation links"].status == "warning"  # a local repository, no repo_web
    assert "source handbook: citation links" not in found
    assert "index freshness" not in found and "citation links" not in found  # the sources' own, above
    away.rename(three["devdocs"])
    devdocs = by_check(run_checks(settings))["source devdocs"]  # fetches again; its last sync failed
    assert devdocs.status == "warning" and "its last sync failed at" in devdocs.detail
    assert "serves its last good commit: git fetch" in devdocs.detail
