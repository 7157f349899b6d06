"""Several docs repositories in one index (DOCSBOT_SOURCES): real git repositories in temp folders,
synced at once, one failing to fetch, one renamed with `was`, one removed from the file."""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from pydantic import SecretStr

from eval.repos import run_git
from bot.blocks import citation_line
from bot.docs_sync import in_words
from foundation.settings import Settings
from foundation.sources_file import SourcesFileError, load_sources
from foundation.wiring import state_config, sync_config
from rag import Citation, Level, open_index
from rag.scope import Scope
from rag.embeddings import LocalMiniLM
from sync.service import run_sync
from state.opening import open_state
from state.sync_requests import SyncRequests
from sync.source_index import sources_meta
from sync.status import load_status, render_status
from sync.webhook import sources_webhook_route
from tests.support.settings import make_settings
from tests.support.sync import new_repo
from tests.support.waiting import until
from tests.test_sync_triggers import github_signature, running_worker, serve


def repo_with(path: Path, files: dict[str, str]) -> Path:
    repo = new_repo(path)
    commit(repo, files, "first")
    return repo


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    run_git(repo, "add", "-A")
    run_git(repo, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", message)
    return run_git(repo, "rev-parse", "HEAD").strip()


def page(title: str, body: str) -> str:
    return f"# {title}\n\n## Details\n\n{body}\n"


def write_sources(path: Path, entries: list[dict[str, str]]) -> Path:
    """The file; `path_levels` and the schedule are written as TOML, the rest as strings."""
    lines = []
    for entry in entries:
        lines.append("[[source]]")
        lines += [f"{key} = {value}" if key in ("path_levels", "sync_interval_minutes") else f'{key} = "{value}"'
                  for key, value in entry.items()]
        lines.append("")
    path.write_text("\n".join(lines))
    return path


@pytest.fixture
def three(tmp_path: Path) -> dict[str, Path]:
    return {
        "handbook": repo_with(tmp_path / "handbook", {
            "README.md": page("Handbook", "How the team works: holidays are booked in the HR tool."),
            "public/benefits.md": page("Benefits", "Every employee gets a yearly learning budget."),
        }),
        "runbooks": repo_with(tmp_path / "runbooks", {
            "README.md": page("Runbooks", "Each alert has a runbook here."),
            "alerts/disk.md": page("Disk full", "Run the cleanup job, then grow the volume by 20 percent."),
        }),
        "devdocs": repo_with(tmp_path / "devdocs", {
            "docs/api.md": page("API", "The API answers on port 8443 with mutual TLS."),
        }),
    }


def settings_for(tmp_path: Path, sources: Path, index_url: str = "") -> Settings:
    """With `index_url`, the index is that Postgres database's (the `index_url` fixture)."""
    return make_settings(tmp_path / "index", sources=str(sources), sync_fetch_retries=0, sync_retry_backoff_s=0.01,
                         index_url=SecretStr(index_url) if index_url else None)


def entries(repos: dict[str, Path]) -> list[dict[str, str]]:
    return [
        {"name": "handbook", "repo": str(repos["handbook"]), "default_level": "team",
         "path_levels": '{ "public/**" = "public" }', "repo_web": "https://git.example.com/acme/handbook"},
        {"name": "runbooks", "repo": str(repos["runbooks"]), "default_level": "restricted",
         "repo_web": "https://gitlab.example.com/acme/runbooks", "link_template": "gitlab"},
        {"name": "devdocs", "repo": str(repos["devdocs"]), "repo_subdir": "docs", "default_level": "public"},
    ]


def rows(settings: Settings) -> dict[str, dict]:
    table = open_index(sync_config(settings).rag.index).all_rows().to_pylist()
    return {row["doc_path"]: row for row in table}


def test_three_sources_share_one_index_each_with_its_own_links_and_levels(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM, index_url: str) -> None:
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", entries(three)), index_url)
    report = run_sync(sync_config(settings), embedder)
    assert set(report.sources) == {"handbook", "runbooks", "devdocs"}
    assert report.added == 5
    indexed = rows(settings)
    assert set(indexed) == {"handbook:README.md", "handbook:public/benefits.md", "runbooks:README.md",
                            "runbooks:alerts/disk.md", "devdocs:api.md"}
    assert len({row["chunk_id"] for row in indexed.values()}) == len(indexed)  # both README.md kept
    hb_head = run_git(three["handbook"], "rev-parse", "HEAD").strip()
    assert indexed["handbook:README.md"]["url"].startswith(f"https://git.example.com/acme/handbook/blob/{hb_head}/README.md")
    assert indexed["runbooks:alerts/disk.md"]["url"].startswith("https://gitlab.example.com/acme/runbooks/-/blob/")
    assert indexed["devdocs:api.md"]["url"] == ""  # no web address for a local repository
    levels = {path: row["access"] for path, row in indexed.items()}
    assert levels == {"handbook:README.md": "team", "handbook:public/benefits.md": "public",
                      "runbooks:README.md": "restricted", "runbooks:alerts/disk.md": "restricted",
                      "devdocs:api.md": "public"}
    meta = sources_meta(open_index(sync_config(settings).rag.index).meta())
    assert meta["handbook"]["commit"] == hb_head and meta["runbooks"]["error"] == ""


def test_a_change_in_one_source_re_embeds_only_its_file_and_a_failing_source_keeps_its_commit(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM, index_url: str) -> None:
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", entries(three)), index_url)
    run_sync(sync_config(settings), embedder)
    before = open_index(sync_config(settings).rag.index).meta()
    commit(three["runbooks"], {"alerts/disk.md": page("Disk full", "Grow the volume by 50 percent.")}, "edit")
    shutil.rmtree(three["devdocs"])  # its fetch fails from now on
    report = run_sync(sync_config(settings), embedder)
    assert report.sources["runbooks"]["mode"] == "incremental" and report.modified == 1
    assert report.sources["handbook"]["mode"] == "unchanged"
    assert report.sources["handbook"]["chunks_embedded"] == 0
    assert report.chunks_embedded == report.sources["runbooks"]["chunks_embedded"] >= 1
    assert "error" in report.sources["devdocs"]
    assert any("devdocs failed" in w for w in report.warnings)
    meta = sources_meta(open_index(sync_config(settings).rag.index).meta())
    assert meta["devdocs"]["commit"] == sources_meta(before)["devdocs"]["commit"]  # its last good commit
    assert meta["devdocs"]["error"]
    assert "devdocs:api.md" in rows(settings)  # still served
    assert "50 percent" in rows(settings)["runbooks:alerts/disk.md"]["text"]
    status = load_status(sync_config(settings))
    shown = render_status(status)
    assert re.search(r"source handbook: \w{12} \(.+\), 2 documents \(2 readable at the team level\)$", shown, re.M)
    assert "source runbooks: " in shown and "2 documents (0 readable at the team level)" in shown
    assert re.search(r"source devdocs: \w{12} .*1 documents .*\n    FAILED at .*serving its last good commit: "
                     r"git fetch", shown)
    assert not shown.startswith("indexed commit")  # each source has its own
    assert "its last good commit: admins see why" in render_status(in_words(status))


def test_a_renamed_source_moves_without_embedding_and_a_removed_one_loses_its_documents(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM, index_url: str) -> None:
    sources = tmp_path / "sources.toml"
    settings = settings_for(tmp_path, write_sources(sources, entries(three)), index_url)
    run_sync(sync_config(settings), embedder)
    renamed = entries(three)
    renamed[1] = {**renamed[1], "name": "ops", "was": "runbooks"}
    write_sources(sources, renamed[:2])  # devdocs removed from the file
    report = run_sync(sync_config(settings), embedder)
    assert report.sources["devdocs"] == {"removed": True}
    assert report.sources["ops"]["renamed"] == 2 and report.chunks_embedded == 0
    assert (tmp_path / "index" / "sync" / "sources" / "ops" / "repo").is_dir()
    assert not (tmp_path / "index" / "sync" / "sources" / "runbooks").exists()  # moved, not cloned again
    assert set(rows(settings)) == {"handbook:README.md", "handbook:public/benefits.md", "ops:README.md",
                                   "ops:alerts/disk.md"}
    assert set(sources_meta(open_index(sync_config(settings).rag.index).meta())) == {"handbook", "ops"}


def test_every_source_failing_fails_the_sync(tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM) -> None:
    sources = write_sources(tmp_path / "sources.toml", [{"name": "gone", "repo": str(tmp_path / "nowhere")}])
    with pytest.raises(Exception, match="every source failed: gone"):
        run_sync(sync_config(settings_for(tmp_path, sources)), embedder)


# -- the file: checked as the access file is ---------------------------------------------------------

def test_a_bad_entry_names_its_line_and_the_fix(tmp_path: Path) -> None:
    base = make_settings(tmp_path / "index")
    path = tmp_path / "sources.toml"
    path.write_text('[[source]]\nname = "a"\nrepo = "/x"\n\n[[source]]\nname = "b"\nrepo = "/y"\n'
                    'default_level = "member"\n')
    with pytest.raises(SourcesFileError, match=r"line 5 \(source 'b'\): `default_level` unknown access level"):
        load_sources(path, base)
    path.write_text('[[source]]\nname = "a"\nrepo = "https://bot:ghp_abc@github.com/acme/docs.git"\n')
    with pytest.raises(SourcesFileError, match="holds a credential.*token_env") as caught:
        load_sources(path, base)
    assert "ghp_abc" not in str(caught.value)
    path.write_text('[[source]]\nname = "a"\nrepo = "/x"\nwebhook_secret = "s3cret"\n')
    with pytest.raises(SourcesFileError, match="credential is written in the file.*webhook_secret_env"):
        load_sources(path, base)
    path.write_text('[[source]]\nname = "a"\nrepo = "https://github.com/acme/docs.git"\ntoken_env = "NOT_SET_X"\n')
    with pytest.raises(SourcesFileError, match="names NOT_SET_X, which is not set"):
        load_sources(path, base)


def test_token_and_secret_come_from_the_environment(tmp_path: Path) -> None:
    path = tmp_path / "sources.toml"
    path.write_text('[[source]]\nname = "a"\nrepo = "https://github.com/acme/docs.git"\ntoken_env = "T"\n'
                    'webhook_secret_env = "H"\nbranch = "main"\n')
    (source,) = load_sources(path, make_settings(tmp_path / "index"), {"T": "tok", "H": "hook"})
    assert source.settings.repo is not None and source.settings.webhook_secret is not None
    assert source.settings.repo.get_secret_value() == "https://x-access-token:tok@github.com/acme/docs.git"
    assert source.settings.webhook_secret.get_secret_value() == "hook"
    assert source.settings.default_level == Level.restricted and source.settings.branch == "main"


def test_a_bad_live_edit_keeps_the_last_good_sources(tmp_path: Path, three: dict[str, Path]) -> None:
    sources = write_sources(tmp_path / "sources.toml", entries(three))
    config = sync_config(settings_for(tmp_path, sources))
    assert config.sources is not None
    assert [s.name for s in config.sources()] == ["handbook", "runbooks", "devdocs"]
    sources.write_text(sources.read_text() + '\n[[source]]\nname = "Bad Name"\nrepo = "/x"\n')
    assert [s.name for s in config.sources()] == ["handbook", "runbooks", "devdocs"]
    assert "lower-case letters" in config.sources.file.error  # type: ignore[attr-defined]


def test_one_repository_settings_and_a_sources_file_are_not_both_set(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="DOCSBOT_SOURCES and DOCSBOT_REPO are both set"):
        make_settings(tmp_path, sources="s.toml", repo="/x")


# -- the push webhook: each repository's push routed to its source, checked with its secret ----------

async def test_signed_pushes_sync_the_source_whose_repository_they_name(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HB_HOOK", "handbook-secret")
    monkeypatch.setenv("RB_HOOK", "runbooks-secret")
    listed = entries(three)[:2]
    listed[0]["webhook_secret_env"], listed[1]["webhook_secret_env"] = "HB_HOOK", "RB_HOOK"
    for entry in listed:
        entry["sync_interval_minutes"] = "60"
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", listed))
    db = await open_state(state_config(settings))
    requests = SyncRequests(db)
    config = sync_config(settings)
    app, url = await serve(sources_webhook_route(config, lambda name: requests.request(f"source:{name}")))

    def push(repo: Path) -> bytes:
        return json.dumps({"ref": "refs/heads/main", "repository": {"clone_url": str(repo)}}).encode()

    try:
        async with aiohttp.ClientSession() as http, running_worker(settings, embedder) as worker:
            await until(lambda: worker.last is not None and set(stored_sources(settings)) == {"handbook", "runbooks"})
            hb = commit(three["handbook"], {"README.md": page("Handbook", "Holidays are booked in Workday.")}, "hb")
            rb = commit(three["runbooks"], {"README.md": page("Runbooks", "Every alert links here.")}, "rb")
            body = push(three["runbooks"])
            for headers in ({"X-Hub-Signature-256": github_signature(body, "handbook-secret")},  # another's secret
                            {"X-Gitlab-Token": "wrong"}, {}):
                async with http.post(url, data=body, headers=headers) as response:
                    assert response.status == 401
            unknown = push(tmp_path / "elsewhere")
            async with http.post(url, data=unknown, headers={"X-Gitlab-Token": "runbooks-secret"}) as response:
                assert response.status == 401  # no source has it: no answer tells which ones exist
            signed = {"X-Hub-Signature-256": github_signature(body, "runbooks-secret")}
            async with http.post(url, data=body, headers=signed) as response:
                assert response.status == 202
            await until(lambda: worker.last is not None
                        and worker.last.sources.get("runbooks", {}).get("commit_after") == rb)
            assert worker.last is not None and set(worker.last.sources) == {"runbooks"}
            assert stored_sources(settings)["handbook"]["commit"] != hb  # not pushed: not synced
            body = push(three["handbook"])
            async with http.post(url, data=body, headers={"X-Gitlab-Token": "handbook-secret"}) as response:
                assert response.status == 202
            await until(lambda: stored_sources(settings)["handbook"]["commit"] == hb)
    finally:
        await app.cleanup()
        await db.close()


def stored_sources(settings: Settings) -> dict[str, dict]:
    return sources_meta(open_index(sync_config(settings).rag.index).meta())


# -- what people see: the source in a citation, a channel scope naming sources -------------------------

def test_a_citation_names_its_source_only_when_the_index_has_several() -> None:
    cited = Citation(n=1, doc_path="handbook:README.md", title="Handbook", section="Details", version="",
                     commit="a" * 40, commit_date="2026-01-02", url="https://git.example.com/x", score=1.0)
    assert citation_line(cited).split(" · ")[1] == "handbook"
    one = replace(cited, doc_path="README.md")
    assert "handbook" not in citation_line(one)


def test_a_channel_scope_may_name_sources() -> None:
    scope = Scope.parse(["source:runbooks", "handbook:ops/**"], "only")
    docs = ["runbooks:README.md", "runbooks:alerts/disk.md", "handbook:ops/oncall.md", "handbook:README.md"]
    assert scope.within(docs) == {"runbooks:README.md", "runbooks:alerts/disk.md", "handbook:ops/oncall.md"}


def test_a_no_op_sync_of_every_source_writes_the_metadata_once(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM) -> None:
    """Each metadata write is a commit and a new index summary (~0.1 s): not two per source."""
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", entries(three)))
    run_sync(sync_config(settings), embedder)
    versions = Path(sync_config(settings).rag.index.location) / "meta.lance" / "_versions"
    before = len(list(versions.iterdir()))
    report = run_sync(sync_config(settings), embedder)
    assert {part["mode"] for part in report.sources.values()} == {"unchanged"}
    assert len(list(versions.iterdir())) == before + 1  # the sources' times, in one write
    meta = sources_meta(open_index(sync_config(settings).rag.index).meta())
    assert all(meta[name]["last_success_at"] and meta[name]["error"] == "" for name in three)


def counting_git(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `git` first on PATH that logs each run of it, then runs the real one: the processes a
    sync starts, counted from outside it."""
    real, log = shutil.which("git"), tmp_path / "git-runs.log"
    wrapper = tmp_path / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("PATH", f"{wrapper.parent}:{os.environ['PATH']}")
    return log


def test_a_no_op_sync_of_every_source_runs_one_git_process_a_source(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fetch each, and nothing else: an unchanged head needs no checkout, no rev-parse, no
    ancestry check and no commit date (it was ~9 processes a source)."""
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", entries(three)))
    log = counting_git(tmp_path, monkeypatch)
    run_sync(sync_config(settings), embedder)
    first = log.read_text().splitlines()
    log.write_text("")
    report = run_sync(sync_config(settings), embedder)
    runs = log.read_text().splitlines()
    assert {part["mode"] for part in report.sources.values()} == {"unchanged"}
    assert len(runs) == 3 and all(" fetch " in run for run in runs), runs
    assert len(first) > 3 * 5  # a first sync clones and checks out each: the wrapper did see them


def test_a_failing_source_between_two_changed_ones_leaves_their_rows_and_commits_right(
        tmp_path: Path, three: dict[str, Path], embedder: LocalMiniLM, index_url: str) -> None:
    """The sources' commits are written once after them all, and the index maintained once: a
    source failing in the middle neither loses the others' commits nor claims its own."""
    settings = settings_for(tmp_path, write_sources(tmp_path / "sources.toml", entries(three)), index_url)
    run_sync(sync_config(settings), embedder)
    before = sources_meta(open_index(sync_config(settings).rag.index).meta())
    heads = {"handbook": commit(three["handbook"], {"README.md": page("Handbook", "Holidays: 30 days.")}, "edit"),
             "devdocs": commit(three["devdocs"], {"docs/cli.md": page("CLI", "The CLI is called acmectl.")}, "add")}
    shutil.rmtree(three["runbooks"])  # the middle source's fetch fails
    report = run_sync(sync_config(settings), embedder)
    assert "error" in report.sources["runbooks"] and report.modified == 1 and report.added == 1
    meta = sources_meta(open_index(sync_config(settings).rag.index).meta())
    assert {name: meta[name]["commit"] for name in heads} == heads
    assert meta["runbooks"]["commit"] == before["runbooks"]["commit"] and meta["runbooks"]["error"]
    indexed = rows(settings)
    assert "30 days" in indexed["handbook:README.md"]["text"] and "devdocs:cli.md" in indexed
    assert "runbooks:alerts/disk.md" in indexed  # still served
    again = run_sync(sync_config(settings), embedder)  # nothing left to re-apply for the two
    assert again.sources["handbook"]["mode"] == again.sources["devdocs"]["mode"] == "unchanged"
