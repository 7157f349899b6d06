"""The index on object storage: DOCSBOT_DATA_DIR=s3://bucket/prefix against a local S3 server,
reached only through the standard AWS_* variables. A sync writes into the bucket, a replica that
never restarts sees each new version within DOCSBOT_INDEX_REFRESH_S, a reader polling during a
sync never sees half of it, and an existing local index moves to a bucket by copying its files."""
from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path

import boto3
import pytest

from commands.cli import main
from foundation.wiring import rag_config, sync_config
from eval.repos import commit_files
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.store.search import Store
from sync.service import run_sync
from tests.standins.s3 import LocalS3
from tests.support.bucket import DOCS, VACATION, bucket_settings, cited_commit, synced_bucket
from tests.support.sync import new_repo


async def test_a_sync_writes_into_the_bucket_and_a_running_replica_sees_the_next_version(
    tmp_path: Path, s3: LocalS3, embedder: LocalMiniLM
) -> None:
    source = new_repo(tmp_path / "upstream")
    c1 = commit_files(source, DOCS)
    settings = bucket_settings(tmp_path, s3, source)
    assert run_sync(sync_config(settings), embedder).commit_after == c1
    assert any(key.startswith("team/index/chunks.lance/") for key in s3.keys("team/index/"))
    assert not (tmp_path / "work" / "chunks.lance").exists()  # the index is only in the bucket

    replica = Engine(rag_config(settings), Store(settings.data_dir, refresh_s=settings.index_refresh_s), embedder,
                     ExtractiveAnswerer())
    commit, text = await cited_commit(replica, "How many vacation days do I get?", "handbook/vacation.md")
    assert commit == c1 and "25 vacation days" in text

    c2 = commit_files(source, {"handbook/vacation.md": VACATION.format(days=28)})
    run_sync(sync_config(settings), embedder)
    synced = time.monotonic()
    while (await cited_commit(replica, "How many vacation days do I get?", "handbook/vacation.md"))[0] != c2:
        assert time.monotonic() - synced < settings.index_refresh_s + 5, "the replica never saw the new version"
        await asyncio.sleep(0.2)
    commit, text = await cited_commit(replica, "How many vacation days do I get?", "handbook/vacation.md")
    assert "28 vacation days" in text


def test_a_reader_polling_the_bucket_during_a_sync_never_sees_half_of_it(
    tmp_path: Path, s3: LocalS3, embedder: LocalMiniLM
) -> None:
    source, _, settings = synced_bucket(tmp_path, s3, embedder)
    reader = Store(settings.data_dir, refresh_s=0)  # checks for a new version on every read
    before = reader.doc_columns("commit")
    # Edits, an add, a delete and a rename: four kinds of change, applied by one sync.
    edited = commit_files(source, {"handbook/vacation.md": VACATION.format(days=30), "ops/oncall.md": None,
                          "ops/escalation.md": "# Escalation\n\nPage the duty manager after 30 minutes.\n"})
    (source / "ops" / "backups.md").rename(source / "ops" / "retention.md")
    commit_files(source, {})
    seen: list[dict[str, tuple]] = []
    done = threading.Event()

    def poll() -> None:
        while not done.is_set():
            seen.append(reader.doc_columns("commit"))

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        run_sync(sync_config(settings), embedder)
    finally:
        done.set()
        poller.join()
    after = reader.doc_columns("commit")
    assert set(after) == {"handbook/vacation.md", "handbook/expenses.md", "ops/escalation.md", "ops/retention.md"}
    assert after["handbook/vacation.md"] == (edited,)
    assert len(seen) >= 3 and all(snapshot in (before, after) for snapshot in seen), \
        [s for s in seen if s not in (before, after)][:1]


def test_an_existing_local_index_moves_to_a_bucket_by_copying_its_files(
    tmp_path: Path, s3: LocalS3, sample_index: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """What the README says to run (`aws s3 sync .docsbot s3://bucket/prefix --exclude ...`)."""
    client = boto3.client("s3", endpoint_url=s3.endpoint)
    for path in sample_index.rglob("*"):
        rel = path.relative_to(sample_index).as_posix()
        if path.is_file() and rel.split("/")[0].endswith(".lance"):
            client.upload_file(str(path), s3.bucket, f"moved/{rel}")
    local = Store(str(sample_index)).counts()
    assert local["documents"] == 23 and Store(s3.uri("moved")).counts() == local
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DOCSBOT_DATA_DIR", s3.uri("moved"))
    monkeypatch.setenv("DOCSBOT_WORK_DIR", str(tmp_path / "work"))
    assert main(["status", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert (status["documents"], status["chunks"]) == (local["documents"], local["chunks"])
