"""Event dedupe and rate limits shared by replicas, on SQLite and Postgres, within one process and
across two real processes; and what a dedupe claim costs on the ack path."""
from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from state.db import StateDB

from state.opening import open_state
from state.audience import KEEP_S, AudienceChanges
from state.dedupe import Dedupe
from state.ratelimit import RateLimit
from eval.clock import Clock
from tests.support.together import run_together


def replica_script(imports: str, repository: str, *body: str) -> str:
    """A replica process: open the state database (argv[1]), build `repo`, wait for the common
    start time (argv[3]), run `body` (one line per item), close."""
    lines = "".join(f"    {line}\n" for line in body)
    return (f"import asyncio, sys, time\nfrom state.opening import open_state\n{imports}\n"
            "async def main(url, name, start):\n"
            f"    db = await open_state(url); repo = {repository}\n"
            "    await asyncio.sleep(float(start) - time.time())\n"
            f"{lines}"
            "    await db.close()\n"
            "asyncio.run(main(*sys.argv[1:]))\n")


@pytest.fixture
async def db(state_url: str) -> AsyncIterator[StateDB]:
    opened = await open_state(state_url)
    yield opened
    await opened.close()


async def test_a_key_is_claimed_once_until_it_expires(db: StateDB) -> None:
    clock = Clock()
    dedupe = Dedupe(db, clock)
    assert await dedupe.claim("event:Ev1", 900) is True
    assert await dedupe.claim("event:Ev1", 900) is False
    assert await dedupe.claim("message:C1:1.0", 900) is True
    clock.now += 899
    assert await dedupe.claim("event:Ev1", 900) is False
    clock.now += 2
    assert await dedupe.claim("event:Ev1", 900) is True  # expired: claimable again, in place
    assert await dedupe.claim("event:Ev1", 900) is False
    assert await dedupe.prune() == 1  # message:C1:1.0 expired; event:Ev1 was renewed
    async with db.begin() as session:
        assert (await session.execute(text("SELECT key FROM dedupe_keys"))).scalars().all() == ["event:Ev1"]


async def test_the_rate_limit_is_a_sliding_window_per_user(db: StateDB) -> None:
    clock = Clock()
    limit = RateLimit(db, per_minute=3, clock=clock)
    assert [await limit.take("U1") for _ in range(3)] == [0.0, 0.0, 0.0]
    assert await limit.take("U1") == pytest.approx(60.0)
    assert await limit.take("U2") == 0.0  # someone else is not limited
    clock.now += 45
    assert await limit.take("U1") == pytest.approx(15.0)
    clock.now += 15
    assert await limit.take("U1") == 0.0  # the first three left the window
    assert await limit.take("U1") == 0.0 and await limit.take("U1") == 0.0
    assert await limit.take("U1") == pytest.approx(60.0)


async def test_two_processes_claiming_the_same_keys_each_win_a_key_once(db: StateDB, state_url: str) -> None:
    script = replica_script("from state.dedupe import Dedupe", "Dedupe(db)",
                            "won = await asyncio.gather(*(repo.claim(f'event:Ev{i}', 900) for i in range(100)))",
                            "print(','.join(str(i) for i, w in enumerate(won) if w))")
    outcomes = await run_together(script, [state_url], ["a", "b"])
    assert all(code == 0 for code, _ in outcomes), outcomes
    won = [{int(i) for i in out.strip().split(",") if i} for _, out in outcomes]
    assert won[0] | won[1] == set(range(100)) and not won[0] & won[1]


async def test_two_processes_share_one_rate_limit(db: StateDB, state_url: str) -> None:
    """Each process asks 10 times at once for the same user: 6 pass in all, not 6 each."""
    script = replica_script("from state.ratelimit import RateLimit", "RateLimit(db, per_minute=6)",
                            "waits = await asyncio.gather(*(repo.take('U_BOB') for _ in range(10)))",
                            "print(sum(1 for w in waits if w == 0))")
    outcomes = await run_together(script, [state_url], ["a", "b"])
    assert all(code == 0 for code, _ in outcomes), outcomes
    assert sum(int(out.strip().splitlines()[-1]) for _, out in outcomes) == 6


async def test_audience_changes_two_processes_log_at_once_are_read_in_order_with_none_skipped(
    db: StateDB, state_url: str
) -> None:
    """A reader that follows the log while two replicas write 25 entries each at once sees all 50,
    numbered 1..50, each exactly once: none commits below a number the reader has passed."""
    script = replica_script("from state.audience import AudienceChanges", "AudienceChanges(db)",
                            "seqs = await asyncio.gather(*(repo.record(channel_id=f'C_{name}{i}') for i in range(25)))",
                            "print(','.join(map(str, seqs)))")
    log, seen = AudienceChanges(db), [0]

    async def follow() -> None:
        deadline = time.monotonic() + 60
        while len(seen) <= 50 and time.monotonic() < deadline:
            seen.extend(change.seq for change in await log.since(seen[-1]))

    outcomes, _ = await asyncio.gather(run_together(script, [state_url], ["a", "b"]), follow())
    assert all(code == 0 for code, _ in outcomes), outcomes
    written = sorted(int(n) for _, out in outcomes for n in out.strip().splitlines()[-1].split(","))
    assert written == list(range(1, 51)) and seen[1:] == written


async def test_old_audience_changes_are_pruned_but_the_numbers_go_on(db: StateDB) -> None:
    clock = Clock()
    log = AudienceChanges(db, clock)
    assert [await log.record(channel_id="C_ENG"), await log.record(user_id="U_DAN")] == [1, 2]
    clock.now += KEEP_S + 1
    assert await log.record(channel_id="C_SRE") == 3  # prunes the first, keeps the newest before it
    assert [(c.seq, c.channel_id, c.user_id) for c in await log.since(0)] == [(2, "", "U_DAN"), (3, "C_SRE", "")]
    clock.now += KEEP_S + 1
    assert await log.record(channel_id="C_ENG") == 4 and await log.newest() == 4


async def test_claim_latency_on_the_ack_path(postgres_url: str) -> None:
    """Benchmark: 500 claims (a new key each, as for every delivered event) against a baseline
    of 500 `SELECT 1` transactions over the same pool, measured in the same run."""
    db = await open_state(postgres_url)
    try:
        dedupe = Dedupe(db)

        async def select_one() -> None:
            async with db.begin() as session:
                await session.execute(text("SELECT 1"))

        async def timed(step: object, n: int = 500) -> list[float]:
            samples = []
            for i in range(n):
                started = time.perf_counter()
                await step(i)  # type: ignore[operator]
                samples.append((time.perf_counter() - started) * 1000)
            return sorted(samples)

        await timed(lambda i: select_one(), 50)  # warm the pool
        baseline = await timed(lambda i: select_one())
        claims = await timed(lambda i: dedupe.claim(f"event:bench{i}", 900))
        repeats = await timed(lambda i: dedupe.claim(f"event:bench{i}", 900))  # retries: already claimed
    finally:
        await db.close()

    def p(samples: list[float], q: float) -> float:
        return samples[min(len(samples) - 1, int(q * len(samples)))]

    base50 = statistics.median(baseline)
    print(f"\n{db.engine.dialect.name} claim latency over 500: new key p50 {p(claims, .5):.2f} ms "
          f"p99 {p(claims, .99):.2f} ms; retried key p50 {p(repeats, .5):.2f} ms p99 {p(repeats, .99):.2f} ms; "
          f"SELECT 1 transaction p50 {base50:.2f} ms p99 {p(baseline, .99):.2f} ms; "
          f"ratio p50 {p(claims, .5) / base50:.1f}x")
    # A claim is one INSERT and a commit: within a small multiple of the cheapest round trip.
    assert p(claims, .5) < 10 * base50
