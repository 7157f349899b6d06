"""`docsbot doctor` against the Slack and OpenAI stand-ins and a real index: all ok when all is
well, and each broken part reported as failed with its fix (exit status 1)."""
from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from pydantic import SecretStr

from bot.local import demo
from eval.bench_acks import free_port
from bot.local.standin import SlackStandIn
from commands.doctor import Finding, manifest_scopes, run_checks
from foundation.settings import Settings
from rag.engine import Engine
from tests.support.settings import REPO
from eval.standins.openai_server import OpenAIStandIn


@dataclass
class World:
    standin: SlackStandIn
    model: OpenAIStandIn
    settings: Settings

    async def check(self, **overrides: object) -> dict[str, Finding]:
        findings = await asyncio.to_thread(run_checks, self.settings.model_copy(update=overrides))
        return {f.check: f for f in findings}


@pytest.fixture
async def world(sample_engine: Engine, settings: Settings, openai_standin: OpenAIStandIn) -> AsyncIterator[World]:
    standin = await SlackStandIn(demo.demo_workspace(), demo.TOKEN).start()
    standin.scopes = manifest_scopes()
    settings = settings.model_copy(update={
        "slack_bot_token": SecretStr(demo.TOKEN), "slack_signing_secret": SecretStr(demo.SIGNING_SECRET),
        "slack_api_url": standin.base_url, "openai_base_url": openai_standin.base_url,
        "access_file": str(demo.ACCESS_FILE),
    })
    yield World(standin, openai_standin, settings)
    await standin.stop()


def failed(findings: dict[str, Finding]) -> dict[str, Finding]:
    return {name: f for name, f in findings.items() if f.status == "failed"}


async def test_all_ok_against_the_stand_ins(world: World) -> None:
    findings = await world.check()
    assert {name: f.status for name, f in findings.items()} == {
        "slack auth": "ok", "slack signing secret": "ok", "slack mode": "ok", "llm endpoint": "ok",
        "llm model": "ok", "llm completion": "ok", "embeddings": "ok", "index": "ok", "index freshness": "ok",
        "access file": "ok", "readable docs": "ok", "unindexed files": "ok",
        # a Slack-connected run on the bundled sample docs, without a repo web URL: both are said
        "docs source": "warning", "citation links": "warning"}
    assert "23 documents" in findings["index"].detail
    assert world.model.requests[-1][1]["max_tokens"] == 1  # the completion check costs one token


async def test_wrong_token(world: World) -> None:
    [(name, finding)] = failed(await world.check(slack_bot_token=SecretStr("xoxb-wrong"))).items()
    assert name == "slack auth" and "invalid_auth" in finding.detail and "SLACK_BOT_TOKEN" in finding.fix


async def test_missing_scope(world: World) -> None:
    world.standin.scopes = [s for s in manifest_scopes() if s != "reactions:read"]
    [(name, finding)] = failed(await world.check()).items()
    assert name == "slack auth" and "missing scopes: reactions:read" in finding.detail and "reinstall" in finding.fix


async def test_closed_llm_port(world: World) -> None:
    closed = f"http://127.0.0.1:{free_port()}/v1"
    [(name, finding)] = failed(await world.check(openai_base_url=closed)).items()
    assert name == "llm endpoint" and closed in finding.detail and "OPENAI_BASE_URL" in finding.fix


async def test_model_not_served(world: World) -> None:
    [(name, finding)] = failed(await world.check(chat_model="gpt-nonexistent")).items()
    assert name == "llm model" and "gpt-4o-mini" in finding.fix


async def test_model_mismatched_index(world: World, sample_engine: Engine) -> None:
    sample_engine.store.set_meta(embedding={"model": "bge-large", "dim": 1024})
    [(name, finding)] = failed(await world.check()).items()
    assert name == "index" and "bge-large" in finding.detail and "rebuild" in finding.fix


async def test_access_file_with_names_instead_of_ids(world: World, tmp_path: pytest.TempPathFactory) -> None:
    access = tmp_path / "access.toml"  # type: ignore[operator]
    access.write_text('admins = ["alice"]\n[channels]\n"#general" = "team"\n')
    [(name, finding)] = failed(await world.check(access_file=str(access))).items()
    assert name == "access file" and "admins: alice" in finding.detail and "channels: #general" in finding.detail


async def doctor(world: World, *args: str, **env: str) -> tuple[int, str]:
    environment = {**os.environ, "SLACK_BOT_TOKEN": demo.TOKEN, "SLACK_SIGNING_SECRET": demo.SIGNING_SECRET,
                   "SLACK_API_URL": world.standin.base_url, "OPENAI_BASE_URL": world.model.base_url,
                   "DOCSBOT_DATA_DIR": world.settings.data_dir, "DOCSBOT_ACCESS_FILE": str(demo.ACCESS_FILE), **env}
    process = await asyncio.create_subprocess_exec(sys.executable, "-m", "commands.cli", "doctor", *args, cwd=REPO,
                                                   env=environment, stdout=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode, out.decode()  # type: ignore[return-value]


async def test_the_command_exits_non_zero_on_any_failure(world: World) -> None:
    status, out = await doctor(world, "--json")
    statuses = {f["check"]: f["status"] for f in json.loads(out)}
    assert status == 0 and "failed" not in statuses.values() and statuses["docs source"] == "warning"  # warnings pass
    status, out = await doctor(world, SLACK_BOT_TOKEN="xoxb-wrong")
    assert status == 1
    assert "FAILED   slack auth" in out and "fix: SLACK_BOT_TOKEN is wrong" in out and "1 failed" in out
    assert "xoxb-wrong" not in out


async def test_socket_mode_token_and_webhook_secret(world: World) -> None:
    findings = await world.check(slack_app_token=SecretStr("xoxb-not-an-app-token"),
                                 repo=SecretStr("https://git.example.com/team/docs.git"))
    assert findings["slack mode"].status == "failed" and "xapp-" in findings["slack mode"].detail
    assert findings["git webhook"].status == "warning" and "DOCSBOT_WEBHOOK_SECRET" in findings["git webhook"].fix
    findings = await world.check(slack_app_token=SecretStr("xapp-1-A0-1-abc"), webhook_secret=SecretStr("s3cret"),
                                 repo=SecretStr("https://git.example.com/team/docs.git"))
    assert findings["slack mode"].status == "ok" and findings["git webhook"].status == "ok"


# -- the installed app's manifest (apps.manifest.export with a configuration token) ----------------
CONFIG_TOKEN, APP_ID = "xoxe.xoxp-1-config", "A_DOCSBOT"


def shipped_manifest() -> dict:
    return json.loads((REPO / "bot" / "manifest.json").read_text())


async def test_the_installed_manifest_has_what_the_code_uses(world: World) -> None:
    world.standin.config_token, world.standin.manifests[APP_ID] = CONFIG_TOKEN, shipped_manifest()
    finding = (await world.check(slack_config_token=SecretStr(CONFIG_TOKEN), slack_app_id=APP_ID))["slack manifest"]
    assert finding.status == "ok" and "agent view" in finding.detail
    assert world.standin.calls_to("apps.manifest.export") == [{"app_id": APP_ID}]


async def test_an_app_from_an_older_manifest_is_told_what_it_lacks(world: World) -> None:
    """An install from before issue 52: the assistant panel, no link scopes or link_shared."""
    old = shipped_manifest()
    old["features"]["assistant_view"] = {"assistant_description": "docs", "suggested_prompts": []}
    del old["features"]["agent_view"], old["features"]["unfurl_domains"]
    scopes = old["oauth_config"]["scopes"]["bot"]
    scopes[:] = [s for s in scopes if not s.startswith("links:")]
    events = old["settings"]["event_subscriptions"]["bot_events"]
    events[:] = [e for e in events if e not in ("link_shared", "app_context_changed")]
    events += ["assistant_thread_started", "assistant_thread_context_changed"]
    world.standin.config_token, world.standin.manifests[APP_ID] = CONFIG_TOKEN, old
    finding = (await world.check(slack_config_token=SecretStr(CONFIG_TOKEN), slack_app_id=APP_ID,
                                 site_url="https://docs.example.com/"))["slack manifest"]
    assert finding.status == "failed" and "assistant_view" in finding.detail and "February 2027" in finding.detail
    assert "missing bot scopes: links:read, links:write" in finding.detail
    assert "missing bot events: link_shared" in finding.detail and "app_context_changed" not in finding.detail
    assert "docs.example.com is not among its unfurl_domains" in finding.detail and "bot/manifest.json" in finding.fix


async def test_an_expired_configuration_token_says_how_to_get_another(world: World) -> None:
    world.standin.config_token = CONFIG_TOKEN
    finding = (await world.check(slack_config_token=SecretStr("xoxe.xoxp-old"), slack_app_id=APP_ID))["slack manifest"]
    assert finding.status == "failed" and "invalid_auth" in finding.detail and "12 hours" in finding.fix
