"""The index-writer lease in the state store (SQLite and Postgres): one holder at a time, renewal,
takeover after expiry, a standby process taking over within seconds of `kill -9`, and a one-shot
writer that waits out a killed holder's lease but not a live one's."""
from __future__ import annotations

import asyncio
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from foundation.settings import Settings
from foundation.wiring import lease_config, state_config
from state.opening import open_state
from state.leases import Leases
from sync.errors import SyncBusy
from sync.lease import INDEX_WRITER, WriterLease, writer_lease
from eval.clock import Clock
from tests.support.settings import make_settings

REPO = Path(__file__).resolve().parent.parent


async def test_one_holder_renewal_and_takeover_after_expiry(state_url: str) -> None:
    db = await open_state(state_url)
    clock = Clock()
    leases = Leases(db, clock)
    try:
        assert await leases.acquire("w", "a", 15) is True
        assert await leases.acquire("w", "b", 15) is False
        clock.now += 10
        assert await leases.acquire("w", "a", 15) is True  # renewed until now + 15
        clock.now += 10
        assert await leases.acquire("w", "b", 15) is False  # still a's: the renewal counted
        assert (await leases.current("w")).holder == "a"
        clock.now += 6
        assert await leases.current("w") is None  # expired
        assert await leases.acquire("w", "b", 15) is True
        assert await leases.acquire("w", "a", 15) is False  # a's renewal now fails
        await leases.release("w", "a")  # not a's to release: no effect
        assert (await leases.current("w")).holder == "b"
        await leases.release("w", "b")
        assert await leases.current("w") is None and await leases.acquire("w", "c", 15) is True
    finally:
        await db.close()


async def test_of_many_racing_for_a_free_lease_exactly_one_wins(state_url: str) -> None:
    dbs = [await open_state(state_url) for _ in range(4)]  # separate pools, as separate processes
    try:
        for name in ("never-taken", "expired"):
            if name == "expired":
                await Leases(dbs[0], lambda: 0.0).acquire(name, "dead", 1)
            wins = await asyncio.gather(*(Leases(db).acquire(name, f"{name}-{i}", 15)
                                          for i, db in enumerate(dbs * 3)))
            assert sum(wins) == 1, name
    finally:
        for db in dbs:
            await db.close()


def lease_settings(tmp_path: Path, url: str) -> Settings:
    return make_settings(tmp_path / "index", database_url=url, sync_lease_ttl_s=2.0, sync_lease_renew_s=0.3)


def holder_process(settings: Settings, state_url: str) -> subprocess.Popen:
    """A one-shot writer in another process, holding the lease until killed."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import time; from foundation.settings import Settings; from foundation.wiring import lease_config; "
         "from sync.lease import writer_lease\n"
         "with writer_lease(lease_config(Settings(_env_file=None))):\n    print('held', flush=True); time.sleep(120)"],
        env={**os.environ, "PYTHONPATH": str(REPO), "DOCSBOT_DATABASE_URL": state_url,
             "DOCSBOT_DATA_DIR": settings.data_dir, "DOCSBOT_SYNC_LEASE_TTL_S": str(settings.sync_lease_ttl_s),
             "DOCSBOT_SYNC_LEASE_RENEW_S": str(settings.sync_lease_renew_s)},
        stdout=subprocess.PIPE, text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    return holder


async def test_a_one_shot_writer_waits_out_a_killed_holders_lease_and_refuses_a_live_one(
    tmp_path: Path, state_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    settings = lease_settings(tmp_path, state_url)
    holder = holder_process(settings, state_url)
    try:
        asked = time.monotonic()
        with pytest.raises(SyncBusy, match=f":{holder.pid}:.* is writing the index"):
            with writer_lease(lease_config(settings)):  # the holder renews all along
                pass
        assert time.monotonic() - asked >= settings.sync_lease_ttl_s
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
        caplog.clear()
        caplog.set_level(logging.WARNING, "docsbot.sync")
        asked = time.monotonic()
        with writer_lease(lease_config(settings)) as lease:  # `docsbot sync` right after the killed one
            assert lease.held
        assert time.monotonic() - asked < settings.sync_lease_ttl_s + 1
        waits = [r.getMessage() for r in caplog.records if "waiting up to" in r.getMessage()]
        assert len(waits) == 1 and f":{holder.pid}:" in waits[0], waits
    finally:
        holder.kill()
        holder.wait()


async def test_a_standby_takes_over_within_seconds_of_the_holder_being_killed(tmp_path: Path, state_url: str) -> None:
    settings = lease_settings(tmp_path, state_url)
    holder = holder_process(settings, state_url)
    db = await open_state(state_url)
    standby = WriterLease(db, lease_config(settings))
    try:
        waiting = asyncio.create_task(standby.wait_acquire())
        await asyncio.sleep(3 * settings.sync_lease_ttl_s)  # renewed all along: the standby waits
        assert not waiting.done() and not standby.held
        os.kill(holder.pid, signal.SIGKILL)
        killed = time.monotonic()
        await asyncio.wait_for(waiting, 10)
        took = time.monotonic() - killed
        assert standby.held and took < settings.sync_lease_ttl_s + 2 * settings.sync_lease_renew_s + 1, took
        with pytest.raises(SyncBusy):
            with writer_lease(lease_config(settings), wait_s=0):
                pass
    finally:
        holder.kill()
        holder.wait()
        await standby.release()
        await db.close()
    with writer_lease(lease_config(settings)) as lease:  # released: free at once
        assert lease.held


async def test_a_holder_that_cannot_renew_stops_counting_itself_the_writer(tmp_path: Path) -> None:
    settings = lease_settings(tmp_path, f"sqlite:///{tmp_path / 'state.db'}")
    db = await open_state(state_config(settings))
    lease = WriterLease(db, lease_config(settings))
    try:
        assert await lease.try_acquire() and lease.held
        await Leases(db).release(INDEX_WRITER, lease.holder)  # as if it expired and was taken...
        assert await Leases(db).acquire(INDEX_WRITER, "usurper", 60)  # ...by a standby
        await asyncio.sleep(settings.sync_lease_renew_s * 3)
        assert not lease.held
        with pytest.raises(Exception, match="no longer holds the index-writer lease"):
            lease.check()
    finally:
        await lease.release()
        await db.close()


def test_status_shows_the_index_when_the_state_database_is_unreachable(
    tmp_path: Path, sample_index: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from commands.cli import main

    monkeypatch.setenv("DOCSBOT_DATA_DIR", str(sample_index))
    monkeypatch.setenv("DOCSBOT_DATABASE_URL", "postgresql://bot:hunter2@127.0.0.1:9/state")
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "documents: 23" in out and "last sync: unknown (state database" in out and "hunter2" not in out
