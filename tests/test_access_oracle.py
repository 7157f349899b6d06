"""With DOCSBOT_ACCESS_HINT=false, nothing tells a reader that documents above their level match
(issue 51): a question only restricted pages answer, and a word only a restricted page holds,
get exactly what nonsense gets, field for field (timings aside), on every surface: `docsbot ask
--json`, `ask_docs` through the MCP SDK's client against a real `docsbot serve`, and Slack on that
same process (the reply, the DM offer, and the answer's log line). The index holds restricted
pages only, so a public reader's own search finds nothing for any of the three questions: every
difference could only come from the pages above them."""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agents.http import MCP_PATH
from bot.local import demo
from bot.local.harness import local_slack
from bot.local.standin import visible_text
from eval.bench_mcp import over_http
from foundation.wiring import open_engine
from rag import Engine, ExtractiveAnswerer, LocalMiniLM
from tests.support.cli import docsbot
from tests.support.mcp import call
from tests.support.served import Served, served
from tests.support.corpus import indexed_pages
from tests.support.settings import make_settings
from tests.support.slack import final_updates
from tests.support.waiting import until
from tests.test_mcp import token_from_slack

VAULT = ("---\ntitle: Quokka vault key rotation\naccess: restricted\n---\n# Quokka vault key rotation\n\n"
         "## Rotating the signing keys\n\nRotate the quokka vault signing keys every 30 days: run "
         "`vaultctl rotate --quokka` from the bastion host, then restart the token service so it reads "
         "the new keys.\n\n## Recovery word\n\nIf the vault seals itself, unseal it with the recovery word "
         "zebrafier, read aloud to the on-call lead.\n")
BASTION = ("---\ntitle: Bastion host access\naccess: restricted\n---\n# Bastion host access\n\n"
           "The bastion host is the only way into the quokka vault network. Request bastion access "
           "from the security team; keys for the bastion are rotated with the vault signing keys.\n")
# Only restricted pages match the first two; nothing matches the third.
ABOVE = ["How do I rotate the quokka vault signing keys?", "What is zebrafier?"]
NONSENSE = "plinth marmalade oscillates the teapot?"
HINT_OFF = {"DOCSBOT_ACCESS_HINT": "false"}


def restricted_corpus(root: Path, embedder: LocalMiniLM) -> str:
    """A data dir whose index holds the two restricted pages and nothing else."""
    return indexed_pages(root, embedder, {"runbooks/quokka-vault.md": VAULT, "runbooks/bastion.md": BASTION})


def without_timings(value: Any) -> Any:
    """The reply as data, every `timings_ms` (and a log line's time) left out."""
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in ("timings_ms", "time")}
    if isinstance(value, list):
        return [without_timings(v) for v in value]
    return value


def cli_reply(data_dir: str, question: str) -> dict[str, Any]:
    asked = docsbot("ask", question, "--level", "public", "--json", env={"DOCSBOT_DATA_DIR": data_dir, **HINT_OFF})
    assert asked.returncode == 1, asked.stderr  # declined
    return without_timings(json.loads(asked.stdout))


async def slack_reply(bot: Served, user: str, channel: str, question: str) -> dict[str, Any]:
    """What `user` saw after asking in `channel` (the answer, any private note or DM offer), and
    the answer's log line as an operator reads it, ids and message times left out."""
    responses, posted, logged = len(bot.standin.responses), len(bot.standin.calls), len(bot.stderr)
    ts = bot.standin.post_as_user(channel, user, question)
    dm = channel == bot.standin.dm_channel(user)
    event = (bot.slack.direct_message if dm else bot.slack.mention)(user, channel, question, ts)
    assert (await bot.slack.event(event)).status == 200
    await until(lambda: [line for line in bot.stderr[logged:] if '"abstained"' in line or '"answered"' in line],
                60, "no answer logged")
    await asyncio.sleep(0.5)  # anything posted after the answer (a DM offer) is posted by now
    [line] = [json.loads(line) for line in bot.stderr[logged:] if '"abstained"' in line or '"answered"' in line]
    calls = [call.params for call in bot.standin.calls[posted:]
             if call.method in ("chat.postMessage", "chat.update", "chat.postEphemeral")]
    return {"shown": [visible_text(params) for params in calls],
            "private": [r.get("text") for r in bot.standin.responses[responses:]],
            "log": without_timings({k: v for k, v in line.items()
                                    if k not in ("message_ts", "answer_id", "trace_id", "span_id")})}


@pytest.mark.timeout(180)
async def test_with_the_hint_off_questions_above_the_level_read_as_nonsense_on_every_surface(
        tmp_path: Path, embedder: LocalMiniLM) -> None:
    data_dir = restricted_corpus(tmp_path, embedder)

    nonsense, *above = await asyncio.gather(*(asyncio.to_thread(cli_reply, data_dir, question)
                                              for question in [NONSENSE, *ABOVE]))
    assert nonsense["abstain_reason"] == "no_match" and nonsense["diagnostics"]["candidates"] == 0
    for question, reply in zip(ABOVE, above):
        assert reply == nonsense, question

    async with served(data_dir, DOCSBOT_LOG_FORMAT="json", **HINT_OFF) as bot:
        eve = await token_from_slack(bot, demo.EVE)  # public
        async with over_http(bot.base_url + MCP_PATH, eve) as session:
            nonsense = without_timings(await call(session, "ask_docs", question=NONSENSE))
            assert nonsense["abstain_reason"] == "no_match"
            for question in ABOVE:
                assert without_timings(await call(session, "ask_docs", question=question)) == nonsense, question

        # Eve (public) in a DM, and bob (team, offered a DM at his level) in #general (public).
        for user, channel in ((demo.EVE, bot.standin.dm_channel(demo.EVE)), (demo.BOB, demo.GENERAL)):
            nonsense = await slack_reply(bot, user, channel, NONSENSE)
            assert nonsense["shown"] and nonsense["log"]["reason"] == "no_match"
            for question in ABOVE:
                assert await slack_reply(bot, user, channel, question) == nonsense, (user, question)


FACILITIES = ("---\ntitle: Facilities\naccess: public\n---\n# Facilities\n\n## Plants\n\n"
              "Plants around the building get water on Tuesdays; the facilities team looks after them.\n")
WATERING = "When are the office plants watered?"


def watering_corpus(root: Path, embedder: LocalMiniLM, level: str) -> Engine:
    """A public page that answers WATERING, and three pages at `level` that answer it better."""
    plants = {f"plants-{n}.md": (
        f"---\ntitle: Office plant watering {n}\naccess: {level}\n---\n# Office plant watering {n}\n\n"
        "## When the office plants are watered\n\nThe office plants are watered every Tuesday morning. "
        "Water the office plants on Tuesday.\n") for n in range(3)}
    indexed_pages(root, embedder, {"facilities.md": FACILITIES, **plants})
    engine = open_engine(make_settings(root / "index", access_hint=False), generator=ExtractiveAnswerer())
    engine.embedder = embedder
    return engine


@pytest.mark.parametrize("level, offered", [("restricted", False), ("team", True)])
async def test_with_the_hint_off_a_dm_is_offered_only_for_pages_the_asker_may_read(
        tmp_path: Path, embedder: LocalMiniLM, level: str, offered: bool) -> None:
    """Bob (team) asks in #general (public): the public page answers, and better pages are at
    `level`. A DM is offered for team pages, which bob would read there; for restricted pages,
    which he may not read, the offer would tell him they exist."""
    engine = watering_corpus(tmp_path, embedder, level)
    settings = make_settings(tmp_path / "index", access_hint=False)
    async with local_slack(settings, engine) as local:
        ts = local.standin.post_as_user(demo.GENERAL, demo.BOB, WATERING)
        assert (await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, WATERING, ts))).status == 200
        await local.settle()
        [answer] = final_updates(local.standin)
        assert "Facilities" in visible_text(answer)  # answered from the public page
        offers = local.standin.calls_to("chat.postEphemeral", ok_only=True)
        assert [offer["user"] for offer in offers] == ([demo.BOB] if offered else [])
