"""Unauthenticated clients that never finish a request against a real `docsbot serve` (real
sockets on loopback), under `ulimit -n 1024` as the probe ran it: 1,000 connections trickling a
request head while 50 signed mentions are answered, and clients that hang up mid-request. The
slow ones are closed, open files and log bytes stay bounded, and every mention is answered."""
from __future__ import annotations

import asyncio
import os
import time

from bot.local.standin import visible_text
from foundation.settings import Settings
from rag.engine import Engine
from tests.support.served import Served, served
from tests.support.waiting import until

SLOW_CLIENTS = 1_000
MENTIONS = 50
TRICKLE_S = 2.0  # one header line this often, as the probe's clients sent one every 10 s


def open_files(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def slow_client(port: int, stop: asyncio.Event, held: list[float]) -> None:
    """Connects, then sends one header line every TRICKLE_S until closed or told to stop;
    records how long the server held it."""
    started = time.monotonic()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
    except OSError:
        return
    try:
        writer.write(b"POST /slack/events HTTP/1.1\r\nHost: x\r\n")
        for i in range(1_000):  # bounded
            if stop.is_set():
                break
            await writer.drain()
            try:
                if await asyncio.wait_for(reader.read(1), TRICKLE_S) == b"":
                    break  # closed by the server
            except TimeoutError:
                writer.write(f"X-Slow-{i}: y\r\n".encode())
    except OSError:
        pass
    finally:
        held.append(time.monotonic() - started)
        writer.close()


async def hang_up(port: int) -> None:
    """A request whose body never comes: the client goes away mid-request."""
    _, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
    await writer.drain()
    writer.transport.abort()


async def test_a_thousand_slow_clients_do_not_take_the_bot_down(sample_engine: Engine, settings: Settings) -> None:
    async with served(str(settings.data_dir), open_files=1024, DOCSBOT_BOT_USER_QUESTIONS_PER_MINUTE="1000") as bot:
        log_bytes = sum(len(line) + 1 for line in bot.stderr)
        stop, held = asyncio.Event(), []
        slow = [asyncio.create_task(slow_client(bot.port, stop, held)) for _ in range(SLOW_CLIENTS)]
        await asyncio.sleep(3.0)
        most_files = open_files(bot.process.pid)
        statuses = []
        for i in range(MENTIONS):
            statuses.append(await bot.ask(f"how do I set up the VPN? ({i})"))
            most_files = max(most_files, open_files(bot.process.pid))
        for _ in range(300):
            await hang_up(bot.port)
        assert await bot.get("/healthz") == 200
        await until(lambda: sum("Use the VPN portal" in visible_text(m) for m in bot.bot_messages()) == MENTIONS,
                    timeout_s=120)
        await asyncio.sleep(15.0)  # past the head timeout of the slowest
        most_files = max(most_files, open_files(bot.process.pid))
        stop.set()
        await asyncio.gather(*slow)
        assert statuses == [200] * MENTIONS
        assert max(held) < 30, sorted(held)[-5:]  # no connection without a request is held for long
        assert most_files < 700, most_files  # the cap (512 under ulimit -n 1024) and the process's own
        logged = sum(len(line) + 1 for line in bot.stderr) - log_bytes
        print(f"held at most {max(held):.1f} s, open files at most {most_files}, {logged} log bytes")
        assert logged < 50_000, "\n".join(bot.stderr[-20:])
        assert not any("Traceback" in line for line in bot.stderr), "\n".join(bot.stderr[-40:])
        await stop_cleanly(bot)


async def stop_cleanly(bot: Served) -> None:
    assert await bot.stop() == 0
