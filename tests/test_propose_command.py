"""`docsbot propose` as a person runs it: one repository from the environment, or a source of the
sources file, to a local GitHub over real git and HTTP (issue 53)."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.standins.forge import LocalForge
from tests.support.cli import docsbot
from tests.test_proposals import DEPLOY, TOKEN, seed


@pytest.fixture
def github(tmp_path: Path) -> Iterator[LocalForge]:
    server = LocalForge(tmp_path / "forge", "github", TOKEN).start()
    seed(server.repository("acme/handbook"), tmp_path / "seed", {"docs/ops/deploy.md": DEPLOY})
    yield server
    server.stop()


def test_propose_opens_a_pull_request_and_never_prints_the_token(github: LocalForge, tmp_path: Path) -> None:
    env = {"DOCSBOT_REPO": github.git_url("acme/handbook").replace("http://", f"http://docsbot:{TOKEN}@"),
           "DOCSBOT_REPO_SUBDIR": "docs", "DOCSBOT_FORGE": "github", "DOCSBOT_FORGE_API_URL": github.api_url,
           "DOCSBOT_FORGE_PROJECT": "acme/handbook", "DOCSBOT_DATA_DIR": str(tmp_path / "data")}
    done = docsbot("propose", "ops/deploy.md", "--section", "Deploying › Staging", "--text",
                   "Staging deploys need the VPN on.", "--by", "Carol", "--json", env=env)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["url"].endswith("/acme/handbook/pull/1") and out["reviewers"] == ["@bob"] and out["placed"]
    assert f"refs/heads/{out['branch']}" in github.refs("acme/handbook")
    assert TOKEN not in done.stdout + done.stderr
    [pull] = github.requests["acme/handbook"]
    assert pull.base == "main" and "A question asked in Slack." in pull.body  # no question given: none quoted
    # recorded for the owners' report, at restricted (the command reads no index to know the page's level)
    listed = docsbot("report", "--level", "restricted", env=env)
    assert listed.returncode == 0, listed.stderr
    assert f"ops/deploy.md › Deploying › Staging: {out['url']} (0 days, by Carol)" in listed.stdout
    assert out["url"] not in docsbot("report", env=env).stdout  # --level public


def test_a_source_of_the_sources_file_pushes_with_the_forge_token(
        github: LocalForge, tmp_path: Path) -> None:
    sources = tmp_path / "sources.toml"
    sources.write_text(f'[[source]]\nname = "handbook"\nrepo = "{github.git_url("acme/handbook")}"\n'
                       f'repo_subdir = "docs"\nbranch = "main"\nforge = "github"\n'
                       f'forge_api_url = "{github.api_url}"\nforge_project = "acme/handbook"\n', encoding="utf-8")
    env = {"DOCSBOT_SOURCES": str(sources), "DOCSBOT_FORGE_TOKEN": TOKEN, "DOCSBOT_DATA_DIR": str(tmp_path / "data")}
    done = docsbot("propose", "handbook:ops/deploy.md", "--section", "Production", "--text", "Page the lead.",
                   "--question", "Who approves a production deploy?", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("opened http://") and "reviewers: @bob" in done.stdout
    [pull] = github.requests["acme/handbook"]
    assert "> Who approves a production deploy?" in pull.body
    unknown = docsbot("propose", "wiki:ops/deploy.md", "--text", "x", env=env)
    assert unknown.returncode == 2 and "name the source, as citations do (`handbook:ops/deploy.md`)" in unknown.stderr


def test_a_section_that_cannot_be_placed_exits_1_with_the_patch(github: LocalForge, tmp_path: Path) -> None:
    env = {"DOCSBOT_REPO": github.git_url("acme/handbook").replace("http://", f"http://docsbot:{TOKEN}@"),
           "DOCSBOT_REPO_SUBDIR": "docs", "DOCSBOT_FORGE": "github", "DOCSBOT_FORGE_API_URL": github.api_url,
           "DOCSBOT_FORGE_PROJECT": "acme/handbook", "DOCSBOT_DATA_DIR": str(tmp_path / "data")}
    done = docsbot("propose", "ops/deploy.md", "--section", "Billing", "--text", "Invoices go out monthly.", env=env)
    assert done.returncode == 1
    assert "patch: " + str(tmp_path / "data" / "proposals") in done.stdout and "could not be placed" in done.stdout
    assert set(github.refs("acme/handbook")) == {"refs/heads/main"}
