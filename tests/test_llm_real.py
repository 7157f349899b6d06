"""The LLM path against a real model on a real OpenAI-compatible server: llama.cpp's server
(llama-cpp-python) serving SmolLM2-135M-Instruct at temperature 0 with a fixed seed, installed by
`make eval-llm` (eval/llm_server.py), which runs these tests (`pytest -m llm`; `make test` leaves
them out). A 135M model writes what it writes: these tests assert only what must hold whatever
it wrote. The reply is the model's (its tokens counted) or the documented fallback; a citation
that does not check out is never shown; nothing above the reader's level is cited or used.
Failures a real server does not produce on demand (429, a stall, a 5xx burst) are the stand-in's
(tests/test_llm_faults.py, tests/test_retries.py, tests/test_llm_wire.py).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bot.local import demo
from bot.blocks import QUOTED_CONTEXT
from bot.local.harness import local_slack
from bot.local.standin import visible_text
from commands.doctor import llm_checks
from foundation.settings import Settings
from foundation.wiring import llm_config
from rag import ABSTAIN_MESSAGES, NOT_SURE_LEAD, Engine, Level
from rag.followup import Rewriter, heuristic_query
from rag.generation import LLMChat
from tests.support.events import Recorded, recording
from tests.support.llama import Llama, llama_server, unavailable
from tests.support.settings import REPO, SAMPLE_DOCS
from tests.support.slack import VPN, answers, mention, streamed_text, with_model

pytestmark = pytest.mark.llm

# Short replies from shorter prompts, and a patient deadline: the model answers in seconds on a
# quiet machine, in tens on a busy one. llama.cpp's server drops a connection at times: the
# default retries (2) stay.
LIMITS = {"llm_max_tokens": 120, "llm_attempt_timeout_s": 120.0, "llm_total_timeout_s": 240.0,
          "context_budget_chars": 2500}
ENV = {f"DOCSBOT_{name.upper()}": str(value) for name, value in LIMITS.items()}
TOKENS = re.compile(r"llm answer: (\d+) prompt \+ (\d+) completion tokens")


@pytest.fixture(scope="session")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Llama]:
    if reason := unavailable():
        pytest.skip(reason)
    with llama_server(tmp_path_factory.mktemp("llama")) as server:
        yield server


@pytest.fixture
def recorded() -> Iterator[Recorded]:
    with recording() as recorder:
        yield recorder


def on_llama(settings: Settings, server: Llama, **overrides: Any) -> Settings:
    return settings.model_copy(update={"openai_base_url": server.base_url, "chat_model": server.model,
                                       **LIMITS, **overrides})


def holds(answer: dict[str, Any], level: str, retrieved: list[dict[str, Any]] | None) -> None:
    """What must hold whatever the model wrote: an answer cites only sources it was given
    (`retrieved`, when known), none above `level`, each cited in its text; anything else is a
    documented abstention, or the closest passage quoted as such."""
    reader = Level.parse(level)
    citations = answer["citations"] + ([answer["near_miss"]] if answer.get("near_miss") else [])
    assert all(level_of(c["doc_path"]) <= reader for c in citations), citations
    assert all(Level.parse(r["access"]) <= reader for r in retrieved or []), retrieved
    if answer["answered"]:
        assert answer["citations"] and all(f"[{c['n']}]" in answer["answer"] for c in answer["citations"])
        if retrieved is not None:
            assert all(1 <= c["n"] <= len(retrieved) and retrieved[c["n"] - 1]["doc_path"] == c["doc_path"]
                       for c in answer["citations"]), (answer["citations"], retrieved)
    else:
        reason = answer["abstain_reason"]
        assert reason in ABSTAIN_MESSAGES
        assert answer["answer"] in (ABSTAIN_MESSAGES[reason], ABSTAIN_MESSAGES["unsure"]) \
            or answer["answer"].startswith(NOT_SURE_LEAD), answer["answer"]


def level_of(doc_path: str) -> Level:
    """A sample page's level, as its front matter says (every page of the sample docs says one)."""
    found = re.search(r"^access:\s*(\w+)", (SAMPLE_DOCS / doc_path).read_text(encoding="utf-8"), re.M)
    assert found, doc_path
    return Level.parse(found.group(1))


def test_docsbot_ask_answers_through_the_server(llama: Llama, sample_index: Path, tmp_path: Path) -> None:
    data = tmp_path / "index"
    shutil.copytree(sample_index, data)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    env = {**clean, **ENV, "OPENAI_BASE_URL": llama.base_url, "DOCSBOT_CHAT_MODEL": llama.model,
           "DOCSBOT_DATA_DIR": str(data), "DOCSBOT_LOG_LEVEL": "INFO"}
    done = subprocess.run([sys.executable, "-m", "commands.cli", "ask", "how many vacation days do I get per year?",
                           "--json"], capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    answer = json.loads(done.stdout)
    assert "provider_error" not in (answer["abstain_reason"], answer["fallback"]), answer["detail"]
    # The model's words as checked, or the docs quoted (instead of words whose citations did not check
    # out, or as the closest passage when the gate doubted the sources), or the model's decline.
    assert answer["model"] in (llama.model, "extractive")
    assert answer["model"] == "extractive" or not answer["fallback"]
    holds(answer, "public", None)
    [(prompt, completion)] = [tuple(map(int, m.groups())) for m in TOKENS.finditer(done.stderr)]
    assert prompt > 0 and completion > 0  # the model wrote the reply the check read
    assert "vacation days" not in done.stderr  # the question never reaches the log


async def test_an_answer_streams_into_a_slack_thread(
    llama: Llama, sample_engine: Engine, settings: Settings, recorded: Recorded
) -> None:
    settings = on_llama(settings, llama)
    engine = with_model(sample_engine, settings)
    async with local_slack(settings, engine) as local:
        question, _ = await mention(local, demo.BOB, demo.GENERAL, VPN)
        await local.settle(timeout_s=300)
        [reply] = answers(local, demo.GENERAL)
        assert reply["thread_ts"] == question
        logged = await local.bot.services.answer_log.find_by_message(demo.GENERAL, reply["ts"])
        streamed = streamed_text(local)
    assert logged is not None and not logged.detail.startswith("provider_error"), logged.detail
    holds({"answer": logged.answer, "answered": logged.answered, "abstain_reason": logged.abstain_reason,
           "citations": logged.citations}, logged.level, logged.retrieved)
    if logged.model == llama.model:  # the model's words, as checked, streamed as it wrote them
        assert logged.answered and streamed
    else:  # the docs quoted instead and said so, or the closest passage as not sure
        assert logged.model == "extractive" and (QUOTED_CONTEXT in visible_text(reply) or not logged.answered)
    assert recorded.attempts == 1 and recorded.tokens and all(p > 0 and c > 0 for p, c in recorded.tokens)


async def test_the_follow_up_rewriter_rewrites_through_the_server(
    llama: Llama, sample_engine: Engine, settings: Settings, recorded: Recorded
) -> None:
    rewriter = Rewriter(llm_config(on_llama(settings, llama, followup_rewrite_timeout_s=120.0)))
    history = [("user", "How do I set up the VPN on my mac?"), ("agent", "Install the profile from Self Service [1].")]
    try:
        query = await rewriter.rewrite("and on Linux?", history)
        sample_engine.rewriter = rewriter
        retrieval, _, _ = await sample_engine.search("and on Linux?", Level.public, history)
    finally:
        await rewriter.aclose()
    assert query and "\n" not in query  # one line, whatever it says
    # What was searched is the model's rewrite, not the heuristic's (the same prompt twice need not
    # get the same words: llama.cpp reuses the cached prompt, and temperature 0 is then not bit-exact).
    assert "\n" not in retrieval.query and retrieval.query != heuristic_query("and on Linux?", history)
    assert len(recorded.tokens) == 2 and all(p > 0 and c > 0 for p, c in recorded.tokens)


def test_doctor_probes_the_server(llama: Llama, settings: Settings) -> None:
    found = {f.check: f for f in llm_checks(on_llama(settings, llama))}
    assert [found[c].status for c in ("llm endpoint", "llm model", "llm completion")] == ["ok"] * 3, found


@pytest.mark.parametrize("configured", [False, True], ids=["learned", "configured"])
async def test_a_prompt_over_a_small_window_is_fitted_not_refused(
    tmp_path: Path, sample_engine: Engine, settings: Settings, recorded: Recorded, configured: bool
) -> None:
    """The sample docs' prompt (~1,300 tokens) against n_ctx 1024: learned from the server's refusal
    (a streamed request gets a stream without an event; asked again unstreamed, the window is
    named), or fitted before the first request when DOCSBOT_LLM_CONTEXT_TOKENS says it."""
    if reason := unavailable():
        pytest.skip(reason)
    with llama_server(tmp_path, n_ctx=1024) as small:
        # The engine's own sources (6,000 characters, the default): ~1,300 tokens with the prompt.
        generator = LLMChat(llm_config(on_llama(settings, small, llm_context_tokens=1024 if configured else 0)))
        sample_engine.generator = generator
        try:
            streamed: list[str] = []

            async def sink(piece: str) -> None:
                streamed.append(piece)

            answer = await sample_engine.ask("how many vacation days do I get per year?", Level.public, on_text=sink)
        finally:
            await generator.aclose()
        assert "exceed context window" not in small.log.read_text() or not configured
    assert "provider_error" not in (answer.abstain_reason, answer.fallback), answer.detail
    holds(answer.to_json(), "public", answer.retrieved)
    [(prompt, completion)] = recorded.tokens
    assert prompt + completion <= 1024 and completion > 0
    # Learned: the refusal (an `other` failure) and the fitted request; configured: that request alone.
    assert recorded.failed.count("other") == (0 if configured else 1)


def golden(path: Path, source: Path, ids: list[str]) -> Path:
    rows = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
    path.mkdir(parents=True)
    (path / "golden.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows if r["id"] in ids))
    return path / "golden.jsonl"


def test_eval_run_over_two_sets(llama: Llama, sample_index: Path, tmp_path: Path) -> None:
    """`python -m eval run` over two sets of the sample docs: golden rows (a follow-up among them,
    which the rewriter rewrites, and one above the public reader's level) and procedure rows."""
    first = golden(tmp_path / "sample", REPO / "eval" / "golden.jsonl", ["q22", "q53", "q57"])
    second = golden(tmp_path / "procedures", REPO / "eval" / "procedures" / "sample.jsonl", ["p05"])
    data = tmp_path / "data"
    for name in ("sample", "procedures"):  # the sample docs indexed once per session, for each set
        shutil.copytree(sample_index, data / "eval" / name)
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    env = {**clean, **ENV, "OPENAI_BASE_URL": llama.base_url, "DOCSBOT_CHAT_MODEL": llama.model,
           "DOCSBOT_DATA_DIR": str(data), "DOCSBOT_FOLLOWUP_REWRITE_TIMEOUT_S": "120"}
    docs = str(REPO / "docs-sync")
    done = subprocess.run([sys.executable, "-m", "eval", "run", "--docs", docs, "--golden", str(first),
                           "--docs", docs, "--golden", str(second), "--json"],
                          capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert list(report["sets"]) == ["sample", "procedures"]
    for result in report["sets"].values():
        assert result["leaks"] == 0 and result["citation_validity"] in (None, 1.0), result["failure_reasons"]
        assert "provider_error" not in result["fallbacks"], result["fallbacks"]  # the model replied each time
        assert result["model_kept"] + sum(result["fallbacks"].values()) <= result["cases"]
