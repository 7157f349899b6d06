"""Back-pressure: a fair queue for answer slots (the per-user rate limit, shared by all
replicas and checked first, is `state.ratelimit`).

Past the rate limit, a question waits in line for one of the answer slots (retrieval +
generation) instead of being turned away: only a full line or a wait longer than the limit gets
the "busy" note. Each replica queues its own work.
"""
from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Literal


Moved = Callable[[int], Awaitable[None]]  # told how many questions are now ahead


@dataclass(eq=False)
class _Ticket:
    user: str
    granted: asyncio.Future[None]
    moved: asyncio.Future[None]


@dataclass
class Turn:
    """What waiting in line came to: `admitted`, else why not ("full" or "timeout")."""

    admitted: bool
    waited_s: float = 0.0
    refused: Literal["", "full", "timeout"] = ""


@dataclass
class AnswerQueue:
    """`slots` answers at once; up to `max_waiting` more wait, at most `wait_s` seconds each.

    Fair between people: the line is served round-robin by asker (each person's own questions
    in order), so one person's burst of questions waits behind everyone else's first question.
    A freed slot passes straight to the next in line, so a newcomer cannot jump the queue.

    A waiting question is told its place at most every `tell_every_s` (the latest place, once
    that time has passed): 50 people in line would otherwise update their placeholders ~1,000
    times while the line drains, far over Slack's rate limits."""

    slots: int
    max_waiting: int
    wait_s: float
    tell_every_s: float = 5.0
    _free: int = field(init=False)
    _lines: OrderedDict[str, deque[_Ticket]] = field(init=False, default_factory=OrderedDict)

    def __post_init__(self) -> None:
        self._free = self.slots

    @property
    def depth(self) -> int:
        """Questions waiting for a slot now."""
        return sum(len(line) for line in self._lines.values())

    @property
    def saturated(self) -> bool:
        """Every slot is taken: a new question waits in line."""
        return self._free == 0

    @property
    def full(self) -> bool:
        """The line is full too: a new question is turned away."""
        return self.saturated and self.depth >= self.max_waiting

    @asynccontextmanager
    async def turn(self, user: str, moved: Moved | None = None) -> AsyncIterator[Turn]:
        """Hold an answer slot for the body, after waiting in line if every slot is taken.

        `moved(ahead)` is awaited on entering the line and when the number of questions ahead
        has changed, at most every `tell_every_s` (calls are never concurrent for one question,
        so a slow update is simply followed by the latest count). An exception it raises leaves
        the line and propagates."""
        started = time.monotonic()
        if self._free > 0 and not self._lines:
            self._free -= 1
            try:
                yield Turn(True)
            finally:
                self._release()
            return
        if self.full:
            yield Turn(False, refused="full")
            return
        loop = asyncio.get_running_loop()
        ticket = _Ticket(user, loop.create_future(), loop.create_future())
        self._lines.setdefault(user, deque()).append(ticket)
        self._moved()  # a newcomer's first question may go ahead of someone's burst
        admitted = False
        try:
            admitted = await self._wait(ticket, started + self.wait_s, moved)
        finally:
            if not admitted:
                self._leave(ticket)
        if not admitted:
            yield Turn(False, time.monotonic() - started, "timeout")
            return
        try:
            yield Turn(True, time.monotonic() - started)
        finally:
            self._release()

    async def _wait(self, ticket: _Ticket, deadline: float, moved: Moved | None) -> bool:
        told, told_at = -1, float("-inf")
        while not ticket.granted.done():
            now = time.monotonic()
            ahead = self._ahead(ticket)
            next_tell = told_at + self.tell_every_s
            if moved is not None and ahead != told and now >= next_tell:
                told, told_at = ahead, now
                await moved(ahead)
                continue  # the line may have moved during the update
            remaining = deadline - now
            if remaining <= 0:
                break
            if ticket.moved.done():
                ticket.moved = asyncio.get_running_loop().create_future()
            waits = [ticket.granted] if ahead != told else [ticket.granted, ticket.moved]
            until = min(remaining, next_tell - now) if ahead != told else remaining
            await asyncio.wait(waits, timeout=until, return_when=asyncio.FIRST_COMPLETED)
        return ticket.granted.done()

    def _order(self) -> list[_Ticket]:
        """The line in serving order: everyone's first question, then everyone's second, ..."""
        order: list[_Ticket] = []
        lines = [list(line) for line in self._lines.values()]
        for depth in range(max((len(line) for line in lines), default=0)):
            order.extend(line[depth] for line in lines if depth < len(line))
        return order

    def _ahead(self, ticket: _Ticket) -> int:
        return self._order().index(ticket) if not ticket.granted.done() else 0

    def _leave(self, ticket: _Ticket) -> None:
        """Out of the line (timed out or cancelled); a slot granted meanwhile is passed on."""
        line = self._lines.get(ticket.user)
        if line is not None and ticket in line:
            line.remove(ticket)
            if not line:
                del self._lines[ticket.user]
            self._moved()
        elif ticket.granted.done():
            self._release()

    def _release(self) -> None:
        """A slot is free: hand it to the next in line (round-robin by person), else keep it."""
        if not self._lines:
            self._free += 1
            return
        user, line = next(iter(self._lines.items()))
        ticket = line.popleft()
        if line:
            self._lines.move_to_end(user)
        else:
            del self._lines[user]
        ticket.granted.set_result(None)
        self._moved()

    def _moved(self) -> None:
        for line in self._lines.values():
            for ticket in line:
                if not ticket.moved.done():
                    ticket.moved.set_result(None)
