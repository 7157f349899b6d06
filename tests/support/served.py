"""A real `docsbot serve` process for tests, against the Slack and OpenAI stand-ins of this
process, with its stderr collected line by line (see test_graceful, test_observability_logs)."""
from __future__ import annotations

import asyncio
import os
import resource
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import aiohttp

from bot.local import demo
from bot.app import EVENTS_PATH
from eval.bench_acks import free_port, serve_env
from bot.deliveries import SlackDeliveries
from bot.local.standin import SlackStandIn
from tests.support.settings import REPO
from eval.standins.openai_server import OpenAIStandIn


@dataclass
class Served:
    process: asyncio.subprocess.Process
    standin: SlackStandIn
    model: OpenAIStandIn
    slack: SlackDeliveries
    base_url: str
    port: int
    stderr: list[str] = field(default_factory=list)

    async def get(self, path: str) -> int:
        async with self.slack.session.get(self.base_url + path) as response:
            return response.status

    async def ask(self, text: str, user: str = demo.BOB, channel: str = demo.GENERAL) -> int:
        ts = self.standin.post_as_user(channel, user, text)
        return (await self.slack.event(self.slack.mention(user, channel, text, ts))).status

    def bot_messages(self, channel: str = demo.GENERAL) -> list[dict]:
        return [m for m in self.standin.messages[channel] if m.get("bot_id")]

    async def stop(self) -> int:
        self.process.terminate()
        return await asyncio.wait_for(self.process.wait(), 30)


async def _collect(stream: asyncio.StreamReader, lines: list[str]) -> None:
    while line := await stream.readline():
        lines.append(line.decode(errors="replace").rstrip("\n"))


@asynccontextmanager
async def served(data_dir: str, model_delay_s: float = 0.0, open_files: int | None = None, **env: str
                 ) -> AsyncIterator[Served]:
    """`docsbot serve` on a free port, ready (`/readyz` 200) when this yields; killed afterwards."""
    model = OpenAIStandIn().start()
    model.reply = lambda messages: "Use the VPN portal [1]."
    model.delay_s = model_delay_s
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    try:
        async with served_with(data_dir, standin, model, open_files, **env) as bot:
            yield bot
    finally:
        await standin.stop()
        model.stop()


@asynccontextmanager
async def served_with(data_dir: str, standin: SlackStandIn, model: OpenAIStandIn, open_files: int | None = None,
                      **env: str) -> AsyncIterator[Served]:
    """`served` against stand-ins the caller keeps (a second process, a restart, sees the first's
    messages and requests); `open_files`: the process's limit (`ulimit -n`)."""
    port = free_port()
    base_url = f"http://127.0.0.1:{port}"
    environment = {**os.environ, **serve_env(standin, model, port, data_dir),
                   "DOCSBOT_BOT_USER_QUESTIONS_PER_MINUTE": "100", "DOCSBOT_LLM_ATTEMPT_TIMEOUT_S": "30", **env}
    def limit() -> None:
        if open_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))

    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "commands.cli", "serve", cwd=REPO,
                                                   env=environment, stderr=asyncio.subprocess.PIPE, preexec_fn=limit)
    session = aiohttp.ClientSession()
    ws = standin.workspace
    slack = SlackDeliveries(session, base_url + EVENTS_PATH, demo.SIGNING_SECRET, ws.team_id, ws.bot_user_id,
                            standin.response_url)
    bot = Served(process, standin, model, slack, base_url, port)
    reader = asyncio.create_task(_collect(process.stderr, bot.stderr))  # type: ignore[arg-type]
    try:
        async with asyncio.timeout(60):
            while True:
                try:
                    if await bot.get("/readyz") == 200:
                        break
                except aiohttp.ClientError:
                    pass
                assert process.returncode is None, "\n".join(bot.stderr)
                await asyncio.sleep(0.1)
        yield bot
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await reader
        await session.close()
