"""The HTTP server's defences against clients that never finish: `docsbot serve` answers Slack,
health checks and webhooks on one port, open to anyone who can reach it.

- A request head must arrive within HEAD_TIMEOUT_S of connecting (or of the previous response on
  a kept-alive connection; aiohttp's keep-alive timer, 3,630 s by default), and a body within
  BODY_TIMEOUT_S of its head (408).
- At most `max_connections` at once, on every route: a connection over the cap evicts the one
  that has been waiting longest without a request being handled on it (a client trickling its
  head, an idle keep-alive), so a flood of slow clients costs each new signed request nothing but
  the oldest slow client. Only when every connection is being answered is the newcomer refused.
  The cap is held under half the process's open-file limit, which also covers the state database,
  the index and Slack's connections.
- Accept errors (out of file descriptors) and clients that hang up are one WARNING line per
  LOG_EVERY_S with a count, never a traceback each (1,064,062 tracebacks, 473 MB in 35 s, before).
"""
from __future__ import annotations

import asyncio
import errno
import logging
import resource
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

log = logging.getLogger(__name__)

HEAD_TIMEOUT_S = 10.0
BODY_TIMEOUT_S = 10.0
LOG_EVERY_S = 10.0
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}


def connection_cap(wanted: int) -> int:
    """`wanted`, held under half the soft limit on open files (the rest: database, index, Slack)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return wanted if soft == resource.RLIM_INFINITY else max(1, min(wanted, soft // 2))


class ConnectionGuard:
    """The connections of one server, oldest first, and which of them are being answered."""

    def __init__(self, max_connections: int) -> None:
        self.max_connections = connection_cap(max_connections)
        self._open: OrderedDict[asyncio.Transport, int] = OrderedDict()  # -> requests being handled
        self.evicted = 0
        self.refused = 0

    @property
    def open(self) -> int:
        return len(self._open)

    def admit(self, transport: asyncio.Transport) -> bool:
        if len(self._open) >= self.max_connections:
            idle = next((t for t, busy in self._open.items() if not busy), None)
            if idle is None:
                self.refused += 1
                return False
            self.evicted += 1
            self._open.pop(idle)
            idle.abort()
        self._open[transport] = 0
        return True

    def closed(self, transport: asyncio.Transport) -> None:
        self._open.pop(transport, None)

    def handling(self, transport: asyncio.Transport | None, delta: int) -> None:
        if transport is not None and transport in self._open:
            self._open[transport] += delta
            if not self._open[transport]:  # answered: idle again, and the newest
                self._open.move_to_end(transport)

    def protocol(self, make: Callable[[], asyncio.Protocol]) -> Callable[[], asyncio.Protocol]:
        return lambda: _Guarded(make(), self)

    def middleware(self) -> Any:
        @web.middleware
        async def bounded(request: web.Request, handler: Callable[[web.Request], Awaitable[web.StreamResponse]]
                          ) -> web.StreamResponse:
            """The body within BODY_TIMEOUT_S (read here, then cached for the handler); the
            connection counts as being answered while the handler runs."""
            transport = request.transport
            self.handling(transport, 1)
            try:
                if request.body_exists:
                    try:
                        async with asyncio.timeout(BODY_TIMEOUT_S):
                            await request.read()
                    except TimeoutError:
                        return web.Response(status=408, text="request body too slow\n")
                return await handler(request)
            finally:
                self.handling(transport, -1)

        return bounded


class _Guarded(asyncio.Protocol):
    """aiohttp's protocol for one connection, admitted (or not) by the guard first."""

    def __init__(self, inner: asyncio.Protocol, guard: ConnectionGuard) -> None:
        self.inner: asyncio.Protocol | None = inner
        self.guard = guard
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if not self.guard.admit(transport):
            self.inner = None
            transport.abort()
            return
        self.transport = transport
        assert self.inner is not None
        self.inner.connection_made(transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.inner is not None and self.transport is not None:
            self.guard.closed(self.transport)
            self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self.inner is not None:
            self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received() if self.inner is not None else None

    def pause_writing(self) -> None:
        if self.inner is not None:
            self.inner.pause_writing()

    def resume_writing(self) -> None:
        if self.inner is not None:
            self.inner.resume_writing()


async def listen(runner: web.AppRunner, guard: ConnectionGuard, host: str, port: int) -> asyncio.Server:
    """The runner's server on host:port behind the guard (runner.setup() first)."""
    assert runner.server is not None
    return await asyncio.get_running_loop().create_server(guard.protocol(runner.server), host, port,
                                                          reuse_address=True)


class QuietConnectionErrors(logging.Filter):
    """Accept errors and hung-up clients (asyncio's and aiohttp's loggers) become one line per
    LOG_EVERY_S, with how many there were, and no traceback; other records pass unchanged."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()
        self._clock = clock
        self._counts: dict[str, int] = {}
        self._next = 0.0

    def filter(self, record: logging.LogRecord) -> bool:
        kind = _kind(record)
        if kind is None:
            return True
        self._counts[kind] = self._counts.get(kind, 0) + 1
        now = self._clock()
        if now < self._next:
            return False
        self._next = now + LOG_EVERY_S
        counts, self._counts = self._counts, {}
        record.msg, record.args = "HTTP connections: %s (at most one line per %.0f s)", (
            ", ".join(f"{n} {what}" for what, n in sorted(counts.items())), LOG_EVERY_S)
        record.exc_info, record.exc_text, record.levelno, record.levelname = None, None, logging.WARNING, "WARNING"
        return True


def _kind(record: logging.LogRecord) -> str | None:
    exc = record.exc_info[1] if record.exc_info else None
    if isinstance(exc, ConnectionError) or (exc is not None and "closing transport" in str(exc)):
        return "client disconnects"
    if isinstance(exc, OSError) and exc.errno in _OUT_OF_RESOURCES:
        return "accept errors (out of file descriptors)"
    return None


def quiet_connection_errors() -> None:
    quiet = QuietConnectionErrors()
    for name in ("asyncio", "aiohttp.server", "aiohttp.access", "aiohttp.web"):
        logging.getLogger(name).addFilter(quiet)
