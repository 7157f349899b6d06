"""The shared record of open placeholders (state.placeholders), on SQLite and Postgres: a row is
an orphan only once its owner stops renewing it, exactly one of several replicas claims it, and
its question is given back once, to its asker only."""
from __future__ import annotations

import asyncio

from state.opening import open_state
from state.placeholders import Orphan, PlaceholderJournal
from eval.clock import Clock

ORPHAN = Orphan("A1", "C1", "1700000000.000100", "1700000000.000001", "U_BOB", "how do I set up the VPN?", "mention")


async def test_an_orphan_is_claimed_by_exactly_one_replica_and_asked_again_once(state_url: str) -> None:
    db = await open_state(state_url)
    clock = Clock()
    dead, *replicas = [PlaceholderJournal(db, owner, 15.0, clock) for owner in ("dead", "r1", "r2", "r3")]
    try:
        await dead.opened(ORPHAN)
        clock.now += 10
        assert await dead.renew() == 1  # its owner lives: not an orphan
        clock.now += 10
        assert await replicas[0].orphans() == []
        clock.now += 6  # the owner stopped renewing 16 s ago
        assert await replicas[0].orphans() == [ORPHAN]
        claims = await asyncio.gather(*(r.claim(ORPHAN.answer_id) for r in replicas for _ in range(3)))
        assert sum(claims) == 1
        winner = replicas[[any(claims[i * 3:i * 3 + 3]) for i in range(3)].index(True)]
        await winner.ended(ORPHAN.answer_id, 3600.0)
        clock.now += 100
        assert await replicas[0].orphans() == []  # ended: nobody ends it again
        assert await winner.take(ORPHAN.answer_id, "U_EVE") is None  # not the asker
        assert await replicas[1].take(ORPHAN.answer_id, "U_BOB") == ORPHAN
        assert await winner.take(ORPHAN.answer_id, "U_BOB") is None  # once
    finally:
        await db.close()


async def test_a_closed_placeholder_is_no_orphan_and_ended_notes_are_pruned(state_url: str) -> None:
    db = await open_state(state_url)
    clock = Clock()
    owner, other = PlaceholderJournal(db, "a", 15.0, clock), PlaceholderJournal(db, "b", 15.0, clock)
    try:
        await owner.opened(ORPHAN)
        await owner.opened(Orphan("A2", "C1", "2.0", None, "U_BOB", "and the wifi?", "dm"))
        await owner.closed(ORPHAN.answer_id)
        clock.now += 16
        [left] = await other.orphans()
        assert left.answer_id == "A2" and await other.claim("A2")
        await other.ended("A2", 60.0)
        assert await other.prune() == 0
        clock.now += 61
        assert await other.prune() == 1
    finally:
        await db.close()
