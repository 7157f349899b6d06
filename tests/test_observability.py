"""Metrics and readiness, end to end: the real bot app on a local port, signed Slack requests, the
Slack and OpenAI stand-ins, and `/metrics` and `/readyz` read over HTTP like Prometheus and a
load balancer read them."""
from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from bot import surfaces
from bot.local import demo
from eval.bench_acks import free_port
from bot.deliveries import buttons
from bot.local.harness import LocalSlack, local_slack
from bot.local.standin import Failure
from commands.cli import load_settings
from foundation.errors import UserError
from foundation.observability.metrics import FAILURES
from foundation.settings import Settings
from rag import ABSTAIN_MESSAGES
from rag.engine import Engine
from eval.repos import commit_files
from tests.support.settings import REPO
from tests.support.slack import final_updates, with_model
from tests.support.sync import new_repo
from eval.standins.openai_server import Failure as OpenAIFailure
from eval.standins.openai_server import OpenAIStandIn

VPN = "how do I set up the VPN?"
UNKNOWN = "what is the airspeed velocity of an unladen swallow?"
BREAK_GLASS = "who approves break-glass access to the production database?"

SERIES = [
    "docsbot_questions_total", "docsbot_stage_seconds", "docsbot_event_to_first_reply_seconds",
    "docsbot_answers_in_progress", "docsbot_questions_rejected_busy_total", "docsbot_feedback_votes_total",
    "docsbot_llm_calls_total", "docsbot_llm_errors_total", "docsbot_llm_retries_total",
    "docsbot_slack_api_errors_total", "docsbot_sync_runs_total", "docsbot_sync_duration_seconds",
    "docsbot_sync_files_total", "docsbot_sync_chunks_total", "docsbot_index_chunks",
    "docsbot_index_commit_age_seconds", "docsbot_seconds_since_last_successful_sync",
]


async def metrics_text(local: LocalSlack) -> str:
    async with aiohttp.ClientSession() as session, session.get(local.base_url + "/metrics") as response:
        assert response.status == 200 and response.content_type == "text/plain"
        return await response.text()


async def scrape(local: LocalSlack) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of /metrics by (name, sorted labels)."""
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(await metrics_text(local)) for s in family.samples}


def total(samples: dict, name: str, **labels: str) -> float:
    return sum(v for (n, ls), v in samples.items() if n == name and labels.items() <= dict(ls).items())


def delta(after: dict, before: dict, name: str, **labels: str) -> float:
    return total(after, name, **labels) - total(before, name, **labels)


async def readyz(local: LocalSlack) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession() as session, session.get(local.base_url + "/readyz") as response:
        return response.status, await response.json()


async def ask(local: LocalSlack, user: str, channel: str, text: str) -> None:
    ts = local.standin.post_as_user(channel, user, text)
    assert (await local.slack.event(local.slack.mention(user, channel, text, ts))).status == 200


async def test_metrics_exposes_every_series_and_outcomes_add_up(sample_engine: Engine, settings: Settings) -> None:
    async with local_slack(settings, sample_engine) as local:
        families = {f.name for f in text_string_to_metric_families(await metrics_text(local))}
        missing = [s for s in SERIES if s.removesuffix("_total") not in families]
        assert not missing, missing
        before = await scrape(local)
        questions = [(demo.BOB, demo.GENERAL, VPN)] * 3 + [(demo.ALICE, demo.GENERAL, UNKNOWN)] * 2 + [
            (demo.ALICE, demo.GENERAL, BREAK_GLASS)]
        for user, channel, text in questions:
            await ask(local, user, channel, text)
        dm = local.standin.dm_channel(demo.BOB)
        ts = local.standin.post_as_user(dm, demo.BOB, VPN)
        await local.slack.event(local.slack.direct_message(demo.BOB, dm, VPN, ts))
        await local.slack.command(demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        after = await scrape(local)

    n = len(questions) + 2
    assert delta(after, before, "docsbot_questions_total") == n
    outcomes = {o: delta(after, before, "docsbot_questions_total", outcome=o)
                for o in ("answered", "abstained", "failed")}
    assert outcomes == {"answered": 5, "abstained": 3, "failed": 0}
    assert delta(after, before, "docsbot_questions_total", outcome="abstained", reason="no_access") == 1
    assert delta(after, before, "docsbot_questions_total", surface="dm") == 1
    assert delta(after, before, "docsbot_questions_total", surface="command") == 1
    assert delta(after, before, "docsbot_questions_total", surface="mention") == len(questions)
    assert delta(after, before, "docsbot_event_to_first_reply_seconds_count") == n
    for stage in ("embed", "retrieve", "post", "total"):
        assert delta(after, before, "docsbot_stage_seconds_count", stage=stage) >= n - 1, stage
    assert total(after, "docsbot_index_chunks") > 0
    assert after[("docsbot_answers_in_progress", ())] == 0


async def test_failures_are_counted_by_kind(
    sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn
) -> None:
    openai_standin.reply = lambda messages: "Use the VPN portal [1]."
    settings = settings.model_copy(update={
        "openai_base_url": openai_standin.base_url, "llm_max_retries": 1, "llm_attempt_timeout_s": 10.0,
        "bot_user_questions_per_minute": 3})
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        before = await scrape(local)
        # A 429 then a 500: retried once, then given up on (the docs quoted instead: an answer).
        openai_standin.failures = [OpenAIFailure(429, {"retry-after": "0"}), OpenAIFailure(500)]
        await ask(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        # The answer cannot be posted: a failed question and a Slack error by method and code.
        local.standin.fail_next("chat.update", Failure("msg_too_long"))
        await ask(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        # A feedback vote on a posted answer.
        await ask(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        update = local.standin.calls_to("chat.update", ok_only=True)[-1]
        await local.slack.click(demo.BOB, demo.GENERAL, buttons(update)[0], update)
        await ask(local, demo.BOB, demo.GENERAL, VPN)  # the fourth in a minute: over the limit
        await local.settle()
        after = await scrape(local)

    assert delta(after, before, "docsbot_llm_errors_total", kind="429") == 1
    assert delta(after, before, "docsbot_llm_errors_total", kind="5xx") == 1
    assert delta(after, before, "docsbot_llm_retries_total", kind="429") == 1
    assert delta(after, before, "docsbot_llm_calls_total") == 4
    assert delta(after, before, "docsbot_questions_total", outcome="failed", reason="error") == 1
    assert delta(after, before, "docsbot_slack_api_errors_total", method="chat.update", error="msg_too_long") == 1
    assert delta(after, before, "docsbot_feedback_votes_total", vote="up", source="button") == 1
    assert delta(after, before, "docsbot_questions_total", outcome="failed", reason="rate_limited") == 1
    assert delta(after, before, "docsbot_questions_total", outcome="answered") == 2  # one quoted from the docs
    assert delta(after, before, "docsbot_questions_total") == 4


async def test_labels_never_carry_user_text_or_ids(sample_engine: Engine, settings: Settings) -> None:
    async with local_slack(settings, sample_engine) as local:
        await ask(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        session = local.bot.client.session  # one HTTP session for every Web API call
        await ask(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        assert session is not None and local.bot.client.session is session and not session.closed
        text = await metrics_text(local)
    for private in ("VPN", demo.BOB, demo.GENERAL, demo.TOKEN):
        assert private not in text


async def test_readiness_reports_each_problem_and_turns_off_at_shutdown(
    sample_engine: Engine, settings: Settings
) -> None:
    async with local_slack(settings, sample_engine) as local:
        status, body = await readyz(local)
        assert status == 503 and set(body["problems"]) == {"slack"}  # auth.test not verified yet
        local.bot.readiness.slack_auth = None
        assert await readyz(local) == (200, {"ready": True, "problems": {}, "degraded": {}})

        store = sample_engine.store
        built = store.meta()["embedding"]
        store.set_meta(embedding={"model": "another-model", "dim": 768})
        status, body = await readyz(local)
        assert status == 503 and "another-model" in body["problems"]["index"]
        store.set_meta(embedding=built)
        assert (await readyz(local))[0] == 200

        local.bot.readiness.stopping = True
        status, body = await readyz(local)
        assert status == 503 and "shutting down" in body["problems"]["shutdown"]
        refused = await local.slack.event(local.slack.mention(demo.BOB, demo.GENERAL, VPN, "1.000001"))
        assert refused.status == 503
        async with aiohttp.ClientSession() as session, session.get(local.base_url + "/healthz") as response:
            assert response.status == 200  # liveness: the process still answers


async def test_the_sync_worker_serves_its_metrics(tmp_path: Path) -> None:
    """`docsbot sync --watch` (a real process) on DOCSBOT_METRICS_PORT: runs, files, chunks, ages.
    The scrape that first counts the run must show everything that run changed: the worker
    publishes a sync's series together, so none of them lags its run counter."""
    source = new_repo(tmp_path / "upstream")
    commit_files(source, {"ops/oncall.md": "# On-call\n\nPages are answered within 15 minutes.\n",
                          "ops/deploy.md": "# Deploys\n\nDeploy from main after review.\n"})
    port = free_port()
    env = {**os.environ, "DOCSBOT_REPO": str(source), "DOCSBOT_DATA_DIR": str(tmp_path / "index"),
           "DOCSBOT_DEFAULT_LEVEL": "team", "DOCSBOT_METRICS_PORT": str(port), "DOCSBOT_SYNC_JITTER_S": "0"}
    log = tmp_path / "worker.log"
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(sys.executable, "-m", "commands.cli", "sync", "--watch",
                                                       cwd=REPO, env=env, stderr=stderr)
    samples: dict = {}
    try:
        async with aiohttp.ClientSession() as session:
            async with asyncio.timeout(90):
                while total(samples, "docsbot_sync_runs_total", outcome="ok") < 1:
                    assert process.returncode is None, f"the sync worker exited:\n{log.read_text()[-3000:]}"
                    await asyncio.sleep(0.2)
                    try:
                        async with session.get(f"http://127.0.0.1:{port}/metrics") as response:
                            text = await response.text()
                    except aiohttp.ClientError:
                        continue
                    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                               for family in text_string_to_metric_families(text) for s in family.samples}
    except TimeoutError:
        pytest.fail(f"no good sync counted on :{port}/metrics within 90 s "
                    f"({'never scraped' if not samples else 'runs: ' + str(total(samples, 'docsbot_sync_runs_total'))})"
                    f"; the worker's log:\n{log.read_text()[-3000:]}")
    finally:
        if process.returncode is None:
            process.terminate()
        await process.wait()
    assert total(samples, "docsbot_sync_files_total", change="added") == 2
    assert total(samples, "docsbot_sync_chunks_total", source="embedded") == 2
    assert total(samples, "docsbot_sync_duration_seconds_count") == 1
    assert total(samples, "docsbot_index_chunks") == 2
    assert 0 <= total(samples, "docsbot_seconds_since_last_successful_sync") < 90
    assert 0 <= total(samples, "docsbot_index_commit_age_seconds") < 300
    # the question series of every surface, as on the bot's /metrics, at 0
    assert {dict(ls)["surface"] for name, ls in samples if name == "docsbot_questions_total"} == set(surfaces.NAMES)
    assert total(samples, "docsbot_questions_total") == 0


async def test_every_surface_has_its_series_from_the_start(sample_engine: Engine, settings: Settings) -> None:
    """Each name bot/surfaces.py declares (the MCP tools' too) has every question series and its
    first-reply histogram on the bot's /metrics before its first question, so a rate() sees it."""
    async with local_slack(settings, sample_engine) as local:
        samples = await scrape(local)
    outcomes = {("answered", "")} | {("abstained", r) for r in ABSTAIN_MESSAGES} | {("failed", r) for r in FAILURES}
    for surface in surfaces.NAMES:
        series = {(labels["outcome"], labels["reason"]) for name, ls in samples
                  if name == "docsbot_questions_total" and (labels := dict(ls))["surface"] == surface}
        assert outcomes <= series, (surface, outcomes - series)
        assert ("docsbot_event_to_first_reply_seconds_count", (("surface", surface),)) in samples, surface


async def test_the_dashboard_only_queries_series_that_exist(sample_engine: Engine, settings: Settings) -> None:
    dashboard = json.loads((REPO / "dashboards" / "docsbot.json").read_text())
    exprs = [t["expr"] for panel in dashboard["panels"] for t in panel["targets"]]
    used = {name for expr in exprs for name in re.findall(r"docsbot_[a-z_]+", expr)}
    async with local_slack(settings, sample_engine) as local:
        scraped = await scrape(local)
    exposed = {name for name, _ in scraped} | {
        "docsbot_slack_api_errors_total",  # no sample before the first error
        "docsbot_unanswered_ratio"}  # one per docs area, from the bot's first hourly refresh
    assert used and used <= exposed, used - exposed
    assert {"outcome", "stage", "kind"} <= {label for expr in exprs for label in re.findall(r"by \(([a-z, ]+)\)", expr)
                                            for label in label.replace(" ", "").split(",")}


@pytest.mark.parametrize("name, value", [("DOCSBOT_DRAIN_S", "-1"), ("DOCSBOT_LOG_FORMAT", "xml"),
                                         ("DOCSBOT_METRICS_PORT", "70000"), ("DOCSBOT_LOG_LEVEL", "loud")])
def test_operating_settings_are_validated(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(UserError, match=name):
        load_settings()


def test_log_level_is_case_insensitive(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCSBOT_LOG_LEVEL", "debug")
    assert load_settings().log_level == "DEBUG"


async def test_the_answer_is_posted_before_it_is_recorded(sample_engine: Engine, settings: Settings) -> None:
    """Recording the answer (and any log maintenance) is off the reply path."""
    recorded_when_posted: list[bool] = []
    async with local_slack(settings, sample_engine) as local:
        log = local.bot.services.answer_log

        async def on_call(call: Any) -> None:
            if call.method == "chat.update" and call.ok:
                recorded_when_posted.append(await log.get(buttons(call.params)[0]["value"]) is not None)

        local.standin.on_call = on_call
        await ask(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle()
        [update] = final_updates(local.standin)
        assert recorded_when_posted == [False]
        assert (await log.get(buttons(update)[0]["value"])).question == VPN  # recorded right after
