"""The answer log, feedback records, candidate grouping and the promote → eval round trip, on
the sample docs in a real LanceDB directory (answers from the real engine, extractive answerer)
and a real state database: SQLite and Postgres."""
from __future__ import annotations

import asyncio
import json
import shutil
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import pytest

from insights.candidates import find_candidates
from foundation.settings import Settings
from eval import runner
from eval.__main__ import main as eval_main
from eval.golden import load_golden
from rag.engine import Engine
from rag.levels import Level
from rag.prompt import PROMPT_VERSION
from state.answers import AnswerLog, AnswerLogError
from state.opening import open_state
from eval.clock import Clock
from tests.support.settings import SAMPLE_DOCS
from tests.support.together import run_together

DEPLOY = "can I deploy on friday?"
VACATION = "how many vacation days do I get?"
BREAK_GLASS = "how do I get emergency write access to tp-prod-db during an incident?"
BANANA = "what's the recipe for banana bread?"
T = TypeVar("T")


async def answer(engine: Engine, log: AnswerLog, question: str, level: Level = Level.team, ts: str = "1.0",
                 history: list[tuple[str, str]] | None = None, index_commit: str = "",
                 channel: str = "C_GENERAL") -> str:
    """An answer logged as asked in `channel` (C_GENERAL: a public channel; else a DM)."""
    result = await engine.ask(question, level, history or [])
    return await log.record(result, asker="U_ASKER", asker_level="restricted", audience_level=level.name,
                            channel=channel, message_ts=ts, thread_ts="0.5", history=history or [],
                            index_commit=index_commit, public_channel=channel == "C_GENERAL")


def with_log(url: str, use: Callable[[AnswerLog], Awaitable[T]]) -> T:
    """For the CLI tests (which run their own event loop): one use of the log in a fresh loop."""

    async def run() -> T:
        db = await open_state(url)
        try:
            return await use(AnswerLog(db))
        finally:
            await db.close()

    return asyncio.run(run())


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = eval_main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
async def log(state_url: str) -> AsyncIterator[AnswerLog]:
    db = await open_state(state_url)
    yield AnswerLog(db)
    await db.close()


@pytest.fixture
def data_env(sample_engine: Engine, settings: Settings, state_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """`python -m eval candidates|promote|reject` read DOCSBOT_DATA_DIR and DOCSBOT_DATABASE_URL
    like any deployment."""
    monkeypatch.setenv("DOCSBOT_DATA_DIR", settings.data_dir)
    monkeypatch.setenv("DOCSBOT_DATABASE_URL", state_url)


async def test_an_answer_is_logged_with_its_context_and_survives_a_reopen(
    sample_engine: Engine, state_url: str
) -> None:
    history = [("user", "hi"), ("agent", "hello")]
    db = await open_state(state_url)
    answer_id = await answer(sample_engine, AnswerLog(db), DEPLOY, ts="1700000000.000200", history=history,
                             index_commit="abc123def")
    await db.close()

    db = await open_state(state_url)  # a restarted process
    log = AnswerLog(db)
    assert await log.find_by_message("C_GENERAL", "") is None
    logged = await log.find_by_message("C_GENERAL", "1700000000.000200")
    assert logged is not None and logged == await log.get(answer_id)
    assert (logged.question, logged.asker, logged.level) == (DEPLOY, "U_ASKER", "team")
    assert (logged.asker_level, logged.audience_level, logged.thread_ts) == ("restricted", "team", "0.5")
    assert logged.history == [{"speaker": "user", "text": "hi"}, {"speaker": "agent", "text": "hello"}]
    assert logged.answered and "policies/deploy-policy.md" in [c["doc_path"] for c in logged.citations]
    assert logged.retrieved and all(
        r["chunk_id"] and len(r["text_hash"]) == 64 and r["commit"] and r["similarity"] > 0 for r in logged.retrieved
    )
    assert (logged.prompt_version, logged.index_commit, logged.model) == (PROMPT_VERSION, "abc123def", "extractive")
    assert logged.diagnostics["timings_ms"]["total_ms"] > 0 and logged.review == "pending"
    assert await log.get("0" * 16) is None and await log.find_by_message("C_OTHER", "1700000000.000200") is None
    await db.close()


async def test_one_feedback_record_per_person_whatever_they_click(log: AnswerLog, sample_engine: Engine) -> None:
    answer_id = await answer(sample_engine, log, DEPLOY)
    for _ in range(3):  # a triple click
        await log.add_feedback(answer_id, "U1", "down", "button")
    await log.add_feedback(answer_id, "U1", "down", "reaction")
    await log.add_feedback(answer_id, "U1", "down", "reaction")  # the reaction event delivered twice
    await log.add_feedback(answer_id, "U1", "down", "button", reason="outdated",
                           expected="see policies/release-process.md")
    await log.add_feedback(answer_id, "U2", "down", "reaction")
    await log.add_feedback(answer_id, "U3", "up", "button")
    votes = {f.user: f for f in await log.feedback(answer_id)}
    assert sorted(votes) == ["U1", "U2", "U3"]
    assert (votes["U1"].vote, votes["U1"].reason) == ("down", "outdated")
    assert votes["U1"].expected == "see policies/release-process.md"

    # U1 removes the reaction: the button vote stands. U2 had only the reaction: withdrawn.
    assert (await log.withdraw_reaction(answer_id, "U1")).vote == "down"
    assert (await log.withdraw_reaction(answer_id, "U2")).withdrawn
    assert await log.withdraw_reaction(answer_id, "U2") is None  # removed twice: nothing changes
    assert await log.withdraw_reaction(answer_id, "U3") is None  # never reacted
    assert [f.user for f in await log.feedback(answer_id)] == ["U1", "U3"]
    assert len(await log.feedback(answer_id, active=False)) == 3

    # A form sent after the reaction was removed explains without voting again; the reason
    # comes back with a new reaction.
    assert (await log.explain(answer_id, "U2", "wrong", " see the FAQ ")).withdrawn
    assert (await log.add_feedback(answer_id, "U2", "down", "reaction")).expected == "see the FAQ"
    # Removing a 👍 reaction leaves a later 👎 reaction alone.
    assert await log.withdraw_reaction(answer_id, "U2", vote="up") is None
    assert (await log.withdraw_reaction(answer_id, "U2", vote="down")).reason == "wrong"


async def test_bad_feedback_is_refused_with_a_clear_message(log: AnswerLog, sample_engine: Engine) -> None:
    answer_id = await answer(sample_engine, log, DEPLOY)
    with pytest.raises(AnswerLogError, match="no logged answer with id 'nope'"):
        await log.add_feedback("nope", "U1", "down", "button")
    with pytest.raises(AnswerLogError, match="unknown vote 'meh'"):
        await log.add_feedback(answer_id, "U1", "meh", "button")  # type: ignore[arg-type]
    with pytest.raises(AnswerLogError, match="unknown reason 'boring'.*wrong, outdated"):
        await log.add_feedback(answer_id, "U1", "down", "button", reason="boring")
    with pytest.raises(AnswerLogError, match="U9 has no feedback on answer"):
        await log.explain(answer_id, "U9", "wrong")
    with pytest.raises(AnswerLogError, match="not an answer id"):
        await log.resolve("fb-x'; DROP")
    assert await log.feedback(answer_id, active=False) == []


async def test_retention_deletes_old_answers_but_keeps_unreviewed_thumbs_down(
    sample_engine: Engine, state_url: str
) -> None:
    clock = Clock()
    db = await open_state(state_url)
    log = AnswerLog(db, retention_days=90, clock=clock)
    liked = await answer(sample_engine, log, DEPLOY, ts="1.0")
    await log.add_feedback(liked, "U1", "up", "button")
    unreviewed = await answer(sample_engine, log, VACATION, ts="2.0")
    await log.add_feedback(unreviewed, "U1", "down", "button", reason="wrong")
    await log.add_feedback(unreviewed, "U2", "up", "reaction")
    promoted = await answer(sample_engine, log, BREAK_GLASS, ts="3.0")
    await log.add_feedback(promoted, "U1", "down", "reaction")
    await log.set_review(promoted, "promoted", "fb-x")
    withdrawn = await answer(sample_engine, log, BANANA, ts="4.0")
    await log.add_feedback(withdrawn, "U1", "down", "reaction")
    await log.withdraw_reaction(withdrawn, "U1")
    clock.now += 89 * 86400
    recent = await answer(sample_engine, log, VACATION, ts="5.0")
    assert await log.prune() == 0 and await log.get(liked) is not None
    clock.now += 2 * 86400

    assert await log.prune() == 3
    assert [await log.get(i) is not None for i in (liked, unreviewed, promoted, withdrawn, recent)] == [
        False, True, False, False, True]
    # the unreviewed 👎 keeps its answer and every vote on it, until someone reviews it
    assert {(f.answer_id, f.user) for f in await log.feedback(active=False)} == {(unreviewed, "U1"), (unreviewed, "U2")}
    await log.set_review(unreviewed, "rejected")
    assert await log.prune() == 1 and await log.feedback(active=False) == []
    assert await AnswerLog(db, retention_days=0, clock=Clock(clock.now * 2)).prune() == 0
    await db.close()


async def test_two_processes_voting_at_the_same_moment_keep_every_vote(
    sample_engine: Engine, log: AnswerLog, state_url: str
) -> None:
    """Two real processes (two replicas) each cast 20 votes on the same answer at once: a button
    and a reaction from the same people, and votes of their own; all are kept, one row each."""
    answer_id = await answer(sample_engine, log, DEPLOY)
    script = (
        "import asyncio, sys\n"
        "from state.opening import open_state\n"
        "from state.answers import AnswerLog\n"
        "async def main(url, answer_id, source, start):\n"
        "    db = await open_state(url); log = AnswerLog(db)\n"
        "    await asyncio.sleep(float(start) - __import__('time').time())\n"
        "    users = [f'U{i}' for i in range(10)] + [f'{source}{i}' for i in range(10)]\n"
        "    await asyncio.gather(*(log.add_feedback(answer_id, u, 'down', source) for u in users))\n"
        "    await db.close()\n"
        "asyncio.run(main(*sys.argv[1:]))\n"
    )
    outcomes = await run_together(script, [state_url, answer_id], ["button", "reaction"])
    assert all(code == 0 for code, _ in outcomes), outcomes
    votes = {f.user: f for f in await log.feedback(answer_id)}
    assert len(votes) == 30
    assert all((votes[f"U{i}"].button_vote, votes[f"U{i}"].reaction_vote) == ("down", "down") for i in range(10))
    candidates = find_candidates(await log.pending_downvoted(), sample_engine.store)
    assert [c.id for c in candidates] == [answer_id] and len(candidates[0].votes) == 30


async def test_candidates_are_grouped_by_likely_cause(sample_engine: Engine, log: AnswerLog, tmp_path: Path) -> None:
    ids = {
        "deploy": await answer(sample_engine, log, DEPLOY, ts="1.0"),
        "vacation": await answer(sample_engine, log, VACATION, ts="2.0"),
        "break_glass": await answer(sample_engine, log, BREAK_GLASS, ts="3.0"),
        "banana": await answer(sample_engine, log, BANANA, ts="4.0"),
        "vpn": await answer(sample_engine, log, "how do I get on the vpn from linux?", Level.public, ts="5.0"),
        "liked": await answer(sample_engine, log, "how do I roll back tidepool-api?", ts="6.0"),
    }
    for name, answer_id in ids.items():
        await log.add_feedback(answer_id, "U1", "up" if name == "liked" else "down", "button")
    await log.add_feedback(ids["vacation"], "U2", "down", "reaction", reason="wrong",
                           expected="it's in handbook/remote-work.md")
    # the deploy policy is rewritten and re-indexed after the feedback
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    policy = docs / "policies" / "deploy-policy.md"
    policy.write_text(policy.read_text().replace("deploy", "ship"))
    sample_engine.index_folder(docs)

    found = {c.id: c for c in find_candidates(await log.pending_downvoted(), sample_engine.store)}
    causes = {name: found[answer_id].cause for name, answer_id in ids.items() if answer_id in found}
    assert causes == {"deploy": "doc_changed", "vacation": "not_cited", "break_glass": "no_access",
                      "banana": "nothing_retrieved", "vpn": "other"}
    deploy = found[ids["deploy"]]
    assert deploy.changed == {"policies/deploy-policy.md": "text changed"}  # onboarding/faq.md is unchanged
    assert "onboarding/faq.md" in deploy.doc_paths()
    vacation = found[ids["vacation"]]
    assert vacation.expected_docs == ["handbook/remote-work.md"] and len(vacation.votes) == 2
    assert {"handbook/time-off.md", "handbook/remote-work.md"} <= set(vacation.doc_paths())
    # an admin sees only the questions answered at their own level or below
    public = {a.answer_id for a, _ in await log.pending_downvoted(max_level=Level.public)}
    assert public == {ids["vpn"]}
    assert len(await log.pending_downvoted(max_level=Level.team)) == 5


def test_cli_lists_promotes_and_rejects(
    sample_engine: Engine, state_url: str, data_env: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history = [("user", "we need prod db access"), ("agent", "which database?")]

    async def setup(log: AnswerLog) -> tuple[str, str]:
        blocked = await answer(sample_engine, log, BREAK_GLASS, ts="1.0", history=history)
        missing = await answer(sample_engine, log, BANANA, ts="2.0")
        for answer_id in (blocked, missing):
            await log.add_feedback(answer_id, "U1", "down", "button", reason="missing")
            await log.add_feedback(answer_id, "U1", "down", "reaction")  # same person: still one vote
        return blocked, missing

    async def in_dm(log: AnswerLog) -> str:
        answer_id = await answer(sample_engine, log, f"{BANANA} my manager must not know", ts="3.0", channel="D_ASKER")
        await log.add_feedback(answer_id, "U_ASKER", "down", "button", reason="other")
        await log.explain(answer_id, "U_ASKER", "other", "the fruit policy, Carol")
        return answer_id

    blocked, missing = with_log(state_url, setup)
    private = with_log(state_url, in_dm)
    code, out, _ = cli(capsys, "candidates", "--json")
    [listed] = [c for c in json.loads(out) if c["id"] == private]
    assert (listed["question"], listed["history"], listed["asker"], listed["answer"]) == (None, [], None, None)
    assert listed["votes"][0]["expected"] is None and "manager" not in out and "Carol" not in out
    code, out, _ = cli(capsys, "candidates")
    assert private in out and "(asked privately: not quoted)" in out and "Carol" not in out and "manager" not in out
    code, _, err = cli(capsys, "promote", private, "--abstain", "--golden", str(tmp_path / "private.jsonl"))
    assert code == 2 and "stay out of the golden set" in err and not (tmp_path / "private.jsonl").exists()
    assert cli(capsys, "reject", private)[0] == 0
    code, out, _ = cli(capsys, "candidates")
    assert code == 0 and "2 thumbs-down answer(s)" in out and BANANA in out
    assert out.index("Nothing retrieved") < out.index("Access abstention")
    assert blocked in out and "reasons: missing" in out
    code, out, _ = cli(capsys, "candidates", "--json")
    listed = {c["id"]: c for c in json.loads(out)}
    assert listed[blocked]["cause"] == "no_access" and len(listed[blocked]["votes"]) == 1
    assert listed[blocked]["level"] == "team" and listed[blocked]["history"][0]["text"] == "we need prod db access"
    assert cli(capsys, "candidates", "--since", "2999-01-01")[1] == "No thumbs-down answers waiting for review.\n"
    with pytest.raises(SystemExit) as bad_date:
        cli(capsys, "candidates", "--since", "last tuesday")
    assert bad_date.value.code == 2 and "not a date" in capsys.readouterr().err

    golden = tmp_path / "golden_feedback.jsonl"
    code, _, err = cli(capsys, "promote", blocked[:8], "--expect", "runbooks/nope.md", "--golden", str(golden))
    assert code == 2 and "not in the index: runbooks/nope.md" in err and not golden.exists()
    code, _, err = cli(capsys, "promote", blocked[:8], "--golden", str(golden))
    assert code == 2 and "--expect PATH" in err
    code, out, _ = cli(capsys, "promote", blocked[:8], "--expect", "runbooks/emergency-db-access.md",
                       "--abstain", "--golden", str(golden))
    assert code == 0 and f"fb-{blocked[:8]}" in out
    (case,) = load_golden([golden])
    assert (case.id, case.question, case.level, case.answerable, case.expect_reason) == (
        f"fb-{blocked[:8]}", BREAK_GLASS, Level.team, False, "no_access")
    assert case.gold_doc_ids == ("runbooks/emergency-db-access.md",) and case.history == tuple(history)
    line = json.loads(golden.read_text())
    assert line["feedback"]["answer_id"] == blocked and line["feedback"]["reasons"] == ["missing"]
    assert line["feedback"]["docs"]["runbooks/emergency-db-access.md"]["commit"]  # recorded at promotion

    code, _, err = cli(capsys, "promote", blocked, "--abstain", "--golden", str(golden))
    assert code == 2 and f"already promoted as fb-{blocked[:8]}" in err
    assert cli(capsys, "reject", missing)[0] == 0
    code, _, err = cli(capsys, "reject", missing)
    assert code == 2 and "already rejected" in err
    code, _, err = cli(capsys, "reject", "abcdef99")
    assert code == 2 and "no logged answer" in err
    assert cli(capsys, "candidates")[1] == "No thumbs-down answers waiting for review.\n"
    assert len(golden.read_text().splitlines()) == 1


def test_promoted_cases_replay_in_the_eval_and_fail_it_when_they_regress(
    sample_engine: Engine, settings: Settings, state_url: str, data_env: None, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def setup(log: AnswerLog) -> tuple[str, str]:
        good = await answer(sample_engine, log, VACATION, ts="1.0")
        bad = await answer(sample_engine, log, DEPLOY, ts="2.0")
        for answer_id in (good, bad):
            await log.add_feedback(answer_id, "U1", "down", "button")
        return good, bad

    good, bad = with_log(state_url, setup)
    golden = tmp_path / "golden_feedback.jsonl"
    assert cli(capsys, "promote", good, "--expect", "handbook/time-off.md", "--golden", str(golden))[0] == 0
    run = ["run", "--golden", str(golden), "--docs", str(SAMPLE_DOCS)]
    assert runner.main(run, sample_engine, settings) == 0, capsys.readouterr().out
    assert "docs changed since feedback" not in capsys.readouterr().out

    # the doc the answer used is retitled (every chunk's text changes): the case still passes,
    # and is flagged for a re-check
    assert "handbook/time-off.md" in with_log(state_url, lambda log: log.get(good)).doc_paths()
    docs = tmp_path / "docs"
    shutil.copytree(SAMPLE_DOCS, docs)
    page = docs / "handbook" / "time-off.md"
    page.write_text(page.read_text().replace("title: Time Off and Leave", "title: Holidays and Leave", 1))
    assert runner.main(["run", "--golden", str(golden), "--docs", str(docs)], sample_engine, settings) == 0
    assert f"fb-{good[:8]}: docs changed since feedback: handbook/time-off.md (text changed)" in capsys.readouterr().out
    sample_engine.index_folder(SAMPLE_DOCS)

    # a case the engine cannot pass: the Kafka ADR is never retrieved for the deploy question
    assert cli(capsys, "promote", bad, "--expect", "adr/0002-event-bus-kafka.md", "--golden", str(golden))[0] == 0
    capsys.readouterr()
    assert runner.main(run, sample_engine, settings) == 1
    out = capsys.readouterr().out
    assert f"fb-{bad[:8]}" in out and "promoted feedback case(s) failing" in out
