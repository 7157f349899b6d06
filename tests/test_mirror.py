"""A replica's local mirror of an index in a bucket (rag/store/mirror.py), against a local S3 server: it
answers like the bucket, copies only the files a new version adds, keeps answering from its last
complete copy when the bucket is down or a copy fails half-way (one WARNING per outage, one INFO
when it ends), survives a restart during an outage, and deletes what the bucket cleaned up.
The replica in a real `docsbot serve` process is in tests/test_scaleout.py."""
from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import boto3
import pytest

from foundation.settings import Settings
from foundation.wiring import rag_config, sync_config
from eval.repos import commit_files
from rag.embeddings import LocalMiniLM
from rag.engine import Engine
from rag.generation import ExtractiveAnswerer
from rag.store import open_index
from rag.store.mirror import PARTIAL, MirroredIndex, manifest_version, mirror_folder
from rag.store.search import Store
from sync.service import run_sync
from sync.status import read_status, render_status
from tests.support.bucket import VACATION, cited_commit, synced_bucket
from tests.support.settings import make_settings
from tests.standins.s3 import LocalS3

QUESTION = "How many vacation days do I get?"
OUTAGE = "cannot read the index bucket"


def local_files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file of the mirrored tables, with (inode, mtime_ns): a file copied again changes."""
    return {p.relative_to(folder).as_posix(): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file() and p.parent != folder}


def bucket_files(s3: LocalS3, prefix: str) -> set[str]:
    return {k[len(prefix):] for k in s3.keys(prefix)}


def served_status(mirror: MirroredIndex) -> str:
    """What `/docs status` shows on a replica that has never synced itself."""
    return render_status(read_status(mirror.store, {"last_sync": None, "last_success_at": None}))


def replica(settings: Settings, folder: Path, embedder: LocalMiniLM) -> tuple[MirroredIndex, Engine]:
    mirror = MirroredIndex(settings.data_dir, folder, refresh_s=3600)  # refreshed by the test
    return mirror, Engine(rag_config(settings), mirror.store, embedder, ExtractiveAnswerer())


def test_manifest_names_of_both_lance_schemes_give_their_version() -> None:
    assert manifest_version("18446744073709551614.manifest") == 1  # V2: u64::MAX - version, 20 digits
    assert manifest_version("00000000000000000000.manifest") == 2**64 - 1
    assert manifest_version("7.manifest") == 7  # V1
    assert manifest_version("7.manifest.partial1") is None and manifest_version("d7.manifest") is None


async def test_the_mirror_answers_like_the_bucket_and_copies_only_what_a_new_version_adds(
    tmp_path: Path, s3: LocalS3, embedder: LocalMiniLM
) -> None:
    source, c1, settings = synced_bucket(tmp_path, s3, embedder)
    mirror, engine = replica(settings, tmp_path / "mirror", embedder)
    assert mirror.snapshot is None  # nothing copied yet: the store says the index is missing
    mirror.refresh()
    direct = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    assert await cited_commit(engine, QUESTION, "handbook/vacation.md") == \
        await cited_commit(direct, QUESTION, "handbook/vacation.md")
    assert (await cited_commit(engine, QUESTION, "handbook/vacation.md"))[0] == c1
    assert mirror.snapshot.versions["chunks"] == Store(settings.data_dir).chunks().version
    # The vector cache is not copied: a replica never embeds documents.
    assert {p.name for p in (tmp_path / "mirror").iterdir() if p.is_dir()} == {"chunks.lance", "meta.lance"}

    before = local_files(tmp_path / "mirror")
    c2 = commit_files(source, {"handbook/vacation.md": VACATION.format(days=28)})
    run_sync(sync_config(settings), embedder)
    assert (await cited_commit(engine, QUESTION, "handbook/vacation.md"))[0] == c1  # pinned until refreshed
    mirror.refresh()
    commit, text = await cited_commit(engine, QUESTION, "handbook/vacation.md")
    assert commit == c2 and "28 vacation days" in text
    after = local_files(tmp_path / "mirror")
    assert all(after[rel] == stamp for rel, stamp in before.items() if rel in after)  # none copied twice
    assert set(after) - set(before), "the new version's files were not copied"
    status = served_status(mirror)
    assert f"served from a local copy of {settings.data_dir} (version {mirror.snapshot.versions['chunks']}" in status
    assert c2[:12] in status


async def test_a_replica_keeps_answering_from_its_copy_through_an_outage_and_a_restart(
    tmp_path: Path, s3: LocalS3, embedder: LocalMiniLM, caplog: pytest.LogCaptureFixture
) -> None:
    _, c1, settings = synced_bucket(tmp_path, s3, embedder)
    mirror, engine = replica(settings, tmp_path / "mirror", embedder)
    mirror.refresh()
    caplog.set_level(logging.INFO, "docsbot.index")
    with s3.outage():
        for _ in range(3):
            mirror.refresh()
            assert (await cited_commit(engine, QUESTION, "handbook/vacation.md"))[0] == c1
        status = served_status(mirror)
        assert "the bucket is unreachable since" in status
        # A replica started while the bucket is down answers from the copy its folder holds.
        restarted, engine2 = replica(settings, tmp_path / "mirror", embedder)
        restarted.refresh()
        assert (await cited_commit(engine2, QUESTION, "handbook/vacation.md"))[0] == c1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and OUTAGE in r.getMessage()]
    assert len(warnings) == 2  # one per process, however many refreshes failed
    assert "taken at" in warnings[0].getMessage()
    mirror.refresh()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.INFO and "reachable again" in r.getMessage()]
    assert mirror.down_since is None and mirror.checked_at is not None


async def test_a_copy_that_fails_half_way_leaves_the_previous_version_answering(
    tmp_path: Path, s3: LocalS3, embedder: LocalMiniLM
) -> None:
    source, c1, settings = synced_bucket(tmp_path, s3, embedder)
    mirror, engine = replica(settings, tmp_path / "mirror", embedder)
    mirror.refresh()
    pinned, before = mirror.snapshot, local_files(tmp_path / "mirror")
    known = bucket_files(s3, "team/index/")
    c2 = commit_files(source, {"handbook/vacation.md": VACATION.format(days=28)})
    run_sync(sync_config(settings), embedder)
    # One new file is archived (a lifecycle rule moved it to Glacier): listed, but a GET fails.
    new = sorted(k for k in bucket_files(s3, "team/index/") - known if k.startswith("chunks.lance/data/"))
    client = boto3.client("s3", endpoint_url=s3.endpoint)
    archived = {"Bucket": s3.bucket, "Key": f"team/index/{new[-1]}"}
    client.copy_object(**archived, CopySource=archived, StorageClass="GLACIER", MetadataDirective="COPY")
    mirror.refresh()
    assert mirror.snapshot == pinned and mirror.error
    assert (await cited_commit(engine, QUESTION, "handbook/vacation.md"))[0] == c1
    copied = local_files(tmp_path / "mirror")
    assert set(copied) - set(before), "the other new files were not copied"
    assert not any(PARTIAL in rel for rel in copied)
    client.restore_object(**archived, RestoreRequest={"Days": 1})
    mirror.refresh()
    assert (await cited_commit(engine, QUESTION, "handbook/vacation.md"))[0] == c2
    after = local_files(tmp_path / "mirror")
    assert all(after[rel] == stamp for rel, stamp in copied.items() if rel in after)  # kept, not copied again


def test_files_the_bucket_cleaned_up_leave_the_mirror_one_refresh_later(
    tmp_path: Path, s3: LocalS3, embedder: LocalMiniLM
) -> None:
    source, _, settings = synced_bucket(tmp_path, s3, embedder)
    mirror, _ = replica(settings, tmp_path / "mirror", embedder)
    mirror.refresh()
    for days in (26, 27):
        commit_files(source, {"handbook/vacation.md": VACATION.format(days=days)})
        run_sync(sync_config(settings), embedder)
        mirror.refresh()
    writer = Store(settings.data_dir)
    with pytest.warns(UserWarning, match="removes every version except the latest"):
        writer.maintain(settings.ann_min_rows, cleanup_after=timedelta(0))  # old versions leave the bucket
    data = "chunks.lance/data/"
    cleaned = {f for f in local_files(tmp_path / "mirror") if f.startswith(data)} - bucket_files(s3, "team/index/")
    assert cleaned
    writer.set_meta(note="one")
    mirror.refresh()  # still kept: a search may be reading the previous version's files
    assert cleaned <= set(local_files(tmp_path / "mirror"))
    writer.set_meta(note="two")
    mirror.refresh()
    here = {f for f in local_files(tmp_path / "mirror") if f.startswith(data)}
    assert here == {f for f in bucket_files(s3, "team/index/") if f.startswith(data)}


def test_one_process_at_a_time_keeps_its_mirror_in_the_work_dir(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings("s3://bucket/index", work_dir=str(tmp_path / "work"))
    kept, release = mirror_folder(rag_config(settings).index)
    assert kept == tmp_path / "work" / "index-mirror"
    other, release_other = mirror_folder(rag_config(settings).index)  # a second replica given the same work dir
    assert other != kept and other.is_dir() and "give each replica its own DOCSBOT_WORK_DIR" in caplog.text
    release_other()
    assert not other.exists()  # a temporary copy is removed
    release()
    assert mirror_folder(rag_config(settings).index)[0] == kept  # free again once the first one let go


def test_a_uri_pyarrow_cannot_list_is_read_directly_with_one_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings("memory://docsbot/index", work_dir=str(tmp_path / "work"))  # LanceDB's, not pyarrow's
    store = open_index(rag_config(settings).index, read_only=True)
    assert store.replica_status() is None and getattr(store, "uri") == settings.data_dir
    assert "no local mirror of memory://docsbot/index" in caplog.text
    assert mirror_folder(rag_config(settings).index)[0] == tmp_path / "work" / "index-mirror"  # its lock was let go
