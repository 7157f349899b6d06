"""The sync side of hostile input, on real git repositories in a temp dir: a file name that is not
UTF-8 is skipped with a reason while the rest of its commit applies, links percent-encode odd file
names, and the sync worker's LISTEN connection is hung up on when Postgres stops answering."""
from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from urllib.parse import quote

from foundation.wiring import sync_config
from eval.repos import commit_files, index_rows
from rag.paths import NOT_UTF8_NAME
from rag.embeddings import LocalMiniLM
from state.opening import open_state
from state.sync_requests import SyncRequests
from sync.service import run_sync
from tests.support.sync import new_repo, sync_settings
from tests.support.tcp_proxy import StallingProxy
from tests.test_state_stall import REPLY_BOUND_S, SLACK, proxied  # noqa: F401 (proxied: a fixture)

CAFE = os.fsdecode(b"caf\xe9.md")  # Latin-1 bytes: what git and os hand over for a name that is not UTF-8
CAFE_SHOWN = "caf\\xe9.md"
DEPLOY = "# Deploy Policy\n\nDeploys to production are frozen on Fridays after 14:00.\n"
ONCALL = "# On-call\n\nThe on-call engineer answers pages within 15 minutes.\n"
COFFEE = "# Coffee\n\nThe coffee machine is descaled on Mondays.\n"


def doc_paths(settings) -> set[str]:
    return {row["doc_path"] for row in index_rows(settings.data_dir)}


def test_a_name_that_is_not_utf8_is_skipped_and_the_rest_of_the_commit_applies(
    tmp_path: Path, embedder: LocalMiniLM
) -> None:
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source)
    commit_files(source, {"policies/deploy.md": DEPLOY})
    assert run_sync(sync_config(settings), embedder).added == 1

    commit_files(source, {f"policies/{CAFE}": COFFEE, "ops/oncall.md": ONCALL,
                          "policies/deploy.md": DEPLOY.replace("14:00", "12:00")})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.added, report.modified, report.unchanged) == ("incremental", 1, 1, 0)
    assert report.skipped == [(f"policies/{CAFE_SHOWN}", NOT_UTF8_NAME)]
    assert doc_paths(settings) == {"policies/deploy.md", "ops/oncall.md"}
    assert f"skipped policies/{CAFE_SHOWN}: {NOT_UTF8_NAME}" in report.render().splitlines()
    assert report.to_json()["skipped"] == [{"path": f"policies/{CAFE_SHOWN}", "reason": NOT_UTF8_NAME}]

    # Renamed to a good name it is indexed; a later delete of the odd name's history changes nothing.
    (source / "policies" / CAFE).rename(source / "policies" / "coffee.md")
    commit_files(source, {})
    report = run_sync(sync_config(settings), embedder)
    assert (report.mode, report.added, report.deleted, report.skipped) == ("incremental", 1, 0, [])
    assert "policies/coffee.md" in doc_paths(settings)

    # A full reconcile (a fresh index) of a tree holding such a name skips it the same way.
    commit_files(source, {CAFE: COFFEE})
    fresh = sync_settings(tmp_path / "fresh", source)
    report = run_sync(sync_config(fresh), embedder)
    assert (report.mode, report.added, report.skipped) == ("reconcile", 3, [(CAFE_SHOWN, NOT_UTF8_NAME)])


def test_links_percent_encode_the_file_name_and_keep_its_slashes(tmp_path: Path, embedder: LocalMiniLM) -> None:
    names = ["team notes/a b.md", "faq/c#1.md", 'faq/say "hi".md', "faq/new\nline.md"]
    source = new_repo(tmp_path / "upstream")
    settings = sync_settings(tmp_path, source, repo_subdir="docs")
    pages = {f"docs/{name}": f"# Page {i}\n\nText of page {i}.\n" for i, name in enumerate(names)}
    commit = commit_files(source, pages)
    run_sync(sync_config(settings), embedder)
    links = {row["doc_path"]: row["url"] for row in index_rows(settings.data_dir)}
    base = f"https://git.example.com/team/docs/blob/{commit}/docs/"
    assert links == {name: base + quote(name, safe="/") + f"#page-{i}" for i, name in enumerate(names)}
    assert links["faq/c#1.md"] == base + "faq/c%231.md#page-1"
    assert all(not set(url) & set(' "\n') for url in links.values())


async def test_the_sync_workers_listen_is_hung_up_on_when_postgres_stops_answering(
    proxied: tuple[StallingProxy, str],  # noqa: F811
) -> None:
    """The server completes the handshake, then answers nothing (a pgbouncer with no server, a
    frozen Postgres): LISTEN is hung up on within the pool's reply bound, and once the server
    answers again a request wakes the worker at once."""
    proxy, url = proxied
    db = await open_state(url)
    requests = SyncRequests(db, poll_s=0.5)
    try:
        waiting = asyncio.create_task(requests.wait(1.0))
        while requests._listener is None:  # connected: stall before LISTEN is answered
            await asyncio.sleep(0)
        proxy.stall()
        started = time.monotonic()
        done, _ = await asyncio.wait({waiting}, timeout=REPLY_BOUND_S + 1.0 + SLACK)
        assert done, "wait() hung on an unanswered LISTEN"
        assert time.monotonic() - started >= REPLY_BOUND_S - 0.5  # hung up on, not answered
        proxy.resume()
        woken = asyncio.create_task(requests.wait(20))
        await asyncio.sleep(1.0)
        replica_db = await open_state(url)
        try:
            sent = time.monotonic()
            await SyncRequests(replica_db).request("webhook")
            await asyncio.wait_for(woken, 10)
            assert time.monotonic() - sent < 1.5
        finally:
            await replica_db.close()
    finally:
        await requests.close()
        await db.close()
