"""A TCP proxy on 127.0.0.1 in front of a real server, which on command turns into a server that
accepts connections and never answers (a frozen Postgres, a network that drops packets but not
connections): the fault a connect timeout alone does not catch."""
from __future__ import annotations

import asyncio
from contextlib import suppress

CHUNK = 65536


class StallingProxy:
    """Forwards every connection to `host:port` until `stall()`; from then on no byte is passed on
    in either direction (held, and passed on after `resume()`), and new connections are accepted
    and left waiting."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.listen_port = 0
        self._flowing = asyncio.Event()
        self._flowing.set()
        self._server: asyncio.Server | None = None
        self._pairs: set[asyncio.Task[None]] = set()

    async def start(self) -> StallingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.listen_port = self._server.sockets[0].getsockname()[1]
        return self

    def stall(self) -> None:
        self._flowing.clear()

    def resume(self) -> None:
        self._flowing.set()

    async def stop(self) -> None:
        self.resume()
        if self._server is not None:
            self._server.close()
        for task in list(self._pairs):
            task.cancel()
        await asyncio.gather(*self._pairs, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()

    def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        task = asyncio.create_task(self._forward(client_reader, client_writer))
        self._pairs.add(task)
        task.add_done_callback(self._pairs.discard)

    async def _forward(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            server_reader, server_writer = await asyncio.open_connection(self.host, self.port)
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(self._pump(client_reader, server_writer), self._pump(server_reader, client_writer))
        finally:
            for writer in (client_writer, server_writer):
                writer.close()
                with suppress(OSError, asyncio.CancelledError):
                    await writer.wait_closed()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Pass bytes on while flowing; a side that closes (or breaks) closes the other."""
        try:
            while data := await reader.read(CHUNK):
                await self._flowing.wait()
                writer.write(data)
                await writer.drain()
        except OSError:
            pass
        finally:
            with suppress(OSError):
                writer.close()
