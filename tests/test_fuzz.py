"""The fuzz targets of `python -m eval fuzz`, with a bounded number of examples each (the long run
is `python -m eval fuzz`), plus the inputs earlier runs found, kept as regressions."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import aiohttp
import pytest

from bot.access import AccessFileError, load_access
from bot.local.harness import local_slack
from foundation.settings import Settings
from eval.fuzz import check_document, check_mrkdwn, fuzz_access_files, fuzz_documents, fuzz_mrkdwn
from eval.fuzz_http import EVENTS_PATH, SlackCase, _slack_headers, fuzz_slack, fuzz_webhook
from eval.fuzzing import Outcome
from rag.answer import Answer, Citation, Diagnostics
from rag.engine import Engine
from tests.support.settings import make_settings


def assert_clean(outcome: Outcome, examples: int) -> None:
    assert outcome.failures == 0, outcome.first_failure
    assert outcome.tried >= examples


def test_front_matter_and_chunker() -> None:
    assert_clean(fuzz_documents(300), 300)


def test_access_file_loader() -> None:
    assert_clean(fuzz_access_files(300), 300)


def test_mrkdwn_escaper() -> None:
    assert_clean(fuzz_mrkdwn(150), 150)


def test_slack_endpoint(tmp_path: Path) -> None:
    outcome = fuzz_slack(200, Settings(_env_file=None, data_dir=str(tmp_path)))
    assert_clean(outcome, 200)
    assert outcome.counts.get("unsigned", 0) > 0 and sum(v for k, v in outcome.counts.items() if "signed " in k) > 0


def test_webhook(tmp_path: Path) -> None:
    assert_clean(fuzz_webhook(200, Settings(_env_file=None, data_dir=str(tmp_path))), 200)


# -- what the fuzzer found ---------------------------------------------------------------------------
def test_a_heading_without_a_slug_does_not_reuse_the_preamble_chunk_id() -> None:
    assert check_document((b"intro\n## ???\ntext\n## !!\nmore\n", (100, 10))) == "parsed"


def test_a_citation_url_with_control_characters_stays_one_link() -> None:
    url = "https://git.example.com/docs/blob/abc/a\x85b\nc|<!channel>"
    answer = Answer("q", "see <!channel>", True, None, [Citation(1, "a", "", "", "", "", "", url, 0.5)],
                    Diagnostics(), "public")
    check_mrkdwn(answer)


def test_access_file_that_is_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "access.toml"
    path.write_bytes(b"\x80[users]\n")
    with pytest.raises(AccessFileError, match="not UTF-8"):
        load_access(path)


@pytest.mark.parametrize("body", [
    json.dumps({"type": "event_callback", "event": ["not", "an", "object"]}).encode(),
    urlencode({"payload": json.dumps({"view": None})}).encode(),
    urlencode({"payload": json.dumps({"type": "block_actions", "actions": 5})}).encode(),
    b"\xff\xfe not utf-8",
])
async def test_signed_bodies_bolt_cannot_read_are_400(body: bytes, sample_engine: Engine) -> None:
    assert await _statuses(sample_engine, body) == (400, 401)


async def test_an_event_id_that_is_not_a_string_is_acknowledged_and_goes_no_further(sample_engine: Engine) -> None:
    body = json.dumps({"type": "event_callback", "event_id": [1], "event": {"type": "app_mention"}}).encode()
    assert await _statuses(sample_engine, body) == (200, 401)


async def _statuses(engine: Engine, body: bytes) -> tuple[int, int]:
    """The HTTP status of `body` signed, then unsigned; neither may reach a listener's Slack call."""
    statuses = []
    settings = make_settings(engine.config.index.data_dir)  # the fixture's
    async with local_slack(settings, engine) as local, aiohttp.ClientSession() as session:
        for signing in ("signed", "unsigned"):
            case = SlackCase("known", body, "application/json", signing)
            async with session.post(local.base_url + EVENTS_PATH, data=body, headers=_slack_headers(case)) as response:
                statuses.append(response.status)
        assert [c for c in local.standin.calls if c.method != "auth.test"] == []
    return statuses[0], statuses[1]
