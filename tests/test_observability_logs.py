"""Logs of a real `docsbot serve` process (JSON lines) through answered, abstained and failed
questions, feedback, bad requests and a restart: one parseable line per event, an answer_id that
ties a question's lines and its feedback together, no question text by default, no configured
secret anywhere, and no third-party noise."""
from __future__ import annotations

import json
import logging
import signal

import pytest

from bot.local import demo
from bot.deliveries import buttons
from bot.local.standin import Failure
from foundation.observability.logs import setup_logging
from foundation.settings import Settings
from rag.engine import Engine
from tests.support.served import served
from tests.support.slack import final_updates
from tests.support.waiting import until

VPN = "how do I set up the VPN?"
OPENAI_KEY = "sk-test-9f8e7d6c5b4a39281706"
WEBHOOK_SECRET = "whsec-5a4b3c2d1e0f"


async def test_json_logs_tie_a_question_together_and_keep_secrets_out(
    sample_engine: Engine, settings: Settings
) -> None:
    env = {"DOCSBOT_LOG_FORMAT": "json", "OPENAI_API_KEY": OPENAI_KEY, "DOCSBOT_WEBHOOK_SECRET": WEBHOOK_SECRET,
           "DOCSBOT_LOG_LEVEL": "debug"}
    async with served(settings.data_dir, **env) as bot:
        assert await bot.ask(VPN) == 200
        await until(lambda: len(final_updates(bot.standin)) == 1)
        [update] = final_updates(bot.standin)
        await bot.slack.click(demo.BOB, demo.GENERAL, buttons(update)[0], update)
        bot.standin.fail_next("chat.update", Failure("msg_too_long"))
        assert await bot.ask("what is the airspeed of a swallow?", user=demo.ALICE) == 200
        await until(lambda: len(bot.standin.calls_to("chat.delete")) == 1)  # the failed update: placeholder deleted
        assert (await bot.slack.post("{broken", "application/json")).status == 400
        await until(lambda: any("feedback" in line for line in bot.stderr))
        bot.process.send_signal(signal.SIGTERM)
        assert await bot.process.wait() == 0

    lines = [line for line in bot.stderr if line.strip()]
    not_json = [line for line in lines if not line.startswith("{")]
    assert not not_json, not_json[:5]
    records = [json.loads(line) for line in lines]  # every line is one JSON object
    assert all({"time", "level", "logger", "message"} <= r.keys() for r in records)
    answer_id = buttons(update)[0]["value"]
    story = [r["message"] for r in records if r.get("answer_id") == answer_id or r.get("on_answer") == answer_id]
    assert story[0] == "question" and "answered" in story and "feedback" in story
    asked = next(r for r in records if r.get("answer_id") == answer_id and r["message"] == "question")
    assert asked["user"] == demo.BOB and asked["channel"] == demo.GENERAL and asked["question"] == f"<{len(VPN)} chars>"
    done = next(r for r in records if r.get("answer_id") == answer_id and r["message"] == "answered")
    assert done["message_ts"] == update["ts"] and done["cited"] and done["timings_ms"]["generate_ms"] >= 0
    assert any(r["message"] == "question failed" and r["reason"] == "error" for r in records)
    everything = "\n".join(lines)
    for secret in (demo.TOKEN, demo.SIGNING_SECRET, OPENAI_KEY, WEBHOOK_SECRET):
        assert secret not in everything
    assert VPN not in everything  # question text only with DOCSBOT_LOG_QUESTIONS=true
    assert "will be unused" not in everything
    assert "lance::" not in everything


@pytest.fixture
def root_logging() -> None:
    """setup_logging configures the process's root logger: put the test runner's back after."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def test_text_lines_mask_secrets_even_in_tracebacks(root_logging: None, capsys: pytest.CaptureFixture) -> None:
    from pydantic import SecretStr

    setup_logging("info", "text", secrets=[SecretStr("xoxb-very-secret"), None], force=True)
    log = logging.getLogger("docsbot.test")
    try:
        raise RuntimeError("token xoxb-very-secret was refused")
    except RuntimeError:
        log.exception("call failed with %s", "xoxb-very-secret")
    log.debug("not at this level")
    err = capsys.readouterr().err
    assert "xoxb-very-secret" not in err and "call failed with ***" in err and "RuntimeError: token *** was" in err
    assert "not at this level" not in err
