"""Warnings before silence (issue 24): `doctor` on the bundled sample docs in a Slack-connected
run, on citation links not configured or not applied, the indexed commit after a folder sync,
and an uncommitted local edit cited with "+dirty" and no link. Real git repositories, the real
`docsbot` command."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from foundation.links import links_of, web_from_remote
from foundation.settings import LINK_PRESETS, Settings

ROOT = Path(__file__).resolve().parent.parent
PAGE = "# Restart the API server\n\nTo restart the API server, delete its pods with oc delete pod.\n"


def docsbot(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    return subprocess.run([sys.executable, "-m", "commands.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**clean, **env})


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True,
                   capture_output=True)


def repository(tmp: Path) -> Path:
    repo = tmp / "docs"
    repo.mkdir()
    (repo / "restart.md").write_text(PAGE, encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "docs")
    git(repo, "remote", "add", "origin", "git@github.com:acme/runbooks.git")
    return repo


def doctor(env: dict[str, str]) -> dict[str, dict]:
    done = docsbot("doctor", "--json", env=env)
    assert "Traceback" not in done.stderr and "ERROR" not in done.stderr, done.stderr
    return {f["check"]: f for f in json.loads(done.stdout)}


@pytest.mark.parametrize(("remote", "web"), [
    ("https://github.com/acme/docs.git", ("https://github.com/acme/docs", "github")),
    ("git@gitlab.com:group/sub/docs.git", ("https://gitlab.com/group/sub/docs", "gitlab")),
    ("https://user:token@bitbucket.org/team/docs",
     ("https://bitbucket.org/team/docs", "{repo_web}/src/{commit}/{path}#{anchor}")),
    ("https://git.example.com/team/docs.git", None),
    ("/srv/docs", None),
])
def test_web_address_from_the_remote(remote: str, web: tuple[str, str] | None) -> None:
    assert web_from_remote(remote) == web


def test_links_are_derived_from_a_known_host_unless_set() -> None:
    gitlab = Settings(_env_file=None, repo="git@gitlab.com:group/docs.git")
    assert links_of(gitlab) == ("https://gitlab.com/group/docs", LINK_PRESETS["gitlab"])
    assert links_of(gitlab.model_copy(update={"repo_web": "https://docs.example.com"}))[0] == "https://docs.example.com"
    assert links_of(Settings(_env_file=None, repo="/srv/docs")) == ("", LINK_PRESETS["github"])


def test_links_not_configured_then_not_applied_then_applied_without_re_embedding(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_REPO": str(repo), "DOCSBOT_DEFAULT_LEVEL": "public"}
    assert docsbot("sync", env=env).returncode == 0
    links = doctor(env)["citation links"]
    assert links["status"] == "warning" and "DOCSBOT_REPO_WEB=https://github.com/acme/runbooks" in links["fix"]

    env["DOCSBOT_REPO_WEB"] = "https://github.com/acme/runbooks"
    links = doctor(env)["citation links"]
    assert links["status"] == "warning" and "1 of 1 documents are indexed without links" in links["detail"]
    synced = docsbot("sync", env=env)
    assert "0 chunks embedded" in synced.stdout, synced.stdout
    assert doctor(env)["citation links"]["status"] == "ok"


def test_sample_docs_in_a_slack_connected_run(tmp_path: Path) -> None:
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_DOCS_DIR": str(ROOT / "docs-sync"),
           "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "s", "SLACK_API_URL": "http://127.0.0.1:9/api/"}
    found = doctor(env)
    assert found["docs source"]["status"] == "warning" and "DOCSBOT_REPO" in found["docs source"]["fix"]
    assert found["slack auth"]["status"] == "failed"  # said once, in the table, not as raw slack_sdk lines
    del env["SLACK_BOT_TOKEN"]
    assert "docs source" not in doctor(env)


def test_folder_sync_keeps_the_commit_and_a_local_edit_is_cited_dirty(tmp_path: Path) -> None:
    repo = repository(tmp_path)
    (repo / "restart.md").write_text(PAGE + "\nThen wait for the operator to recreate them.\n", encoding="utf-8")
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index"), "DOCSBOT_DOCS_DIR": str(repo),
           "DOCSBOT_DEFAULT_LEVEL": "public", "DOCSBOT_REPO_WEB": "https://github.com/acme/runbooks"}
    assert docsbot("index", env=env).returncode == 0
    assert docsbot("sync", env=env).returncode == 0  # what the worker of `make run` does next
    status = json.loads(docsbot("status", "--json", env=env).stdout)
    assert status["commit"] and status["commit"].endswith("+dirty")
    asked = json.loads(docsbot("ask", "how do I restart the API server?", "--json", env=env).stdout)
    cited = asked["citations"][0]
    assert cited["commit"].endswith("+dirty") and cited["url"] == ""
    text = docsbot("ask", "how do I restart the API server?", env=env).stdout
    assert "+dirty" in text
