"""Upgrading: the answer log that earlier versions kept in LanceDB beside the index is imported
into the state database the first time it is opened, once, with nothing lost."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
from pydantic import SecretStr

from foundation.settings import Settings
from foundation.wiring import state_config
from state.answers import AnswerLog
from state.opening import open_state
from state.legacy import LegacyImport
from tests.support.settings import make_settings
from tests.support.together import run_together
OLD_ANSWER_SCHEMA = pa.schema([
    ("answer_id", pa.string()), ("created_ms", pa.int64()), ("question", pa.string()), ("history", pa.string()),
    ("asker", pa.string()), ("asker_level", pa.string()), ("audience_level", pa.string()), ("level", pa.string()),
    ("channel", pa.string()), ("message_ts", pa.string()), ("thread_ts", pa.string()), ("answer", pa.string()),
    ("answered", pa.bool_()), ("abstain_reason", pa.string()), ("detail", pa.string()), ("model", pa.string()),
    ("prompt_version", pa.string()), ("index_commit", pa.string()), ("retrieved", pa.string()),
    ("citations", pa.string()), ("diagnostics", pa.string()), ("review", pa.string()), ("golden_id", pa.string()),
    ("reviewed_ms", pa.int64()),
])
OLD_FEEDBACK_SCHEMA = pa.schema([
    ("feedback_id", pa.string()), ("answer_id", pa.string()), ("user", pa.string()), ("vote", pa.string()),
    ("button_vote", pa.string()), ("reaction_vote", pa.string()), ("reason", pa.string()), ("expected", pa.string()),
    ("created_ms", pa.int64()), ("updated_ms", pa.int64()), ("answer_created_ms", pa.int64()),
])


def old_answer(answer_id: str, created_ms: int, review: str = "pending", **extra: Any) -> dict[str, Any]:
    return {
        "answer_id": answer_id, "created_ms": created_ms, "question": f"question {answer_id}?",
        "history": json.dumps([{"speaker": "user", "text": "hi"}]), "asker": "U_BOB", "asker_level": "team",
        "audience_level": "public", "level": "public", "channel": "C_GENERAL", "message_ts": f"17000.{answer_id[:4]}",
        "thread_ts": "", "answer": "Use the VPN portal [1].", "answered": True, "abstain_reason": None, "detail": "",
        "model": "extractive", "prompt_version": "p3", "index_commit": "abc1234",
        "retrieved": json.dumps([{"doc_path": "onboarding/vpn-setup.md", "text_hash": "h" * 64, "commit": "abc1234"}]),
        "citations": json.dumps([{"n": 1, "doc_path": "onboarding/vpn-setup.md"}]),
        "diagnostics": json.dumps({"timings_ms": {"total_ms": 12.5}}), "review": review,
        "golden_id": "fb-aaaaaaaa" if review == "promoted" else "", "reviewed_ms": 5 if review != "pending" else 0,
    } | extra


def old_vote(answer_id: str, user: str, vote: str, **extra: Any) -> dict[str, Any]:
    return {
        "feedback_id": f"{answer_id}/{user}", "answer_id": answer_id, "user": user, "vote": vote,
        "button_vote": vote, "reaction_vote": "", "reason": None, "expected": None, "created_ms": 100,
        "updated_ms": 200, "answer_created_ms": 1,
    } | extra


def build_old_answer_log(data_dir: Path) -> None:
    """The `answers` and `feedback` tables as the previous version left them beside the index."""
    lance = lancedb.connect(str(data_dir))
    answers = [old_answer("aaaaaaaa00000001", 1_000), old_answer("aaaaaaaa00000002", 2_000, "promoted"),
               old_answer("bbbbbbbb00000003", 3_000, abstain_reason="no_match", answered=False)]
    votes = [old_vote("aaaaaaaa00000001", "U1", "down", reason="outdated", expected="see faq.md"),
             old_vote("aaaaaaaa00000001", "U2", "", button_vote="", reaction_vote=""),  # withdrawn
             old_vote("aaaaaaaa00000002", "U1", "down", button_vote="", reaction_vote="down"),
             old_vote("cccccccc00000009", "U3", "down")]  # its answer had expired: nothing to attach it to
    lance.create_table("answers", pa.Table.from_pylist(answers, schema=OLD_ANSWER_SCHEMA))
    lance.create_table("feedback", pa.Table.from_pylist(votes, schema=OLD_FEEDBACK_SCHEMA))


def settings_for(data_dir: Path, state_url: str) -> Settings:
    return make_settings(data_dir, database_url=SecretStr(state_url))


async def test_the_lancedb_answer_log_is_imported_once_on_first_open(tmp_path: Path, state_url: str) -> None:
    data_dir = tmp_path / "index"
    build_old_answer_log(data_dir)
    db = await open_state(state_config(settings_for(data_dir, state_url)))
    log = AnswerLog(db)
    first = await log.get("aaaaaaaa00000001")
    assert first is not None and first.history == [{"speaker": "user", "text": "hi"}]
    assert first.retrieved[0]["commit"] == "abc1234" and first.diagnostics["timings_ms"]["total_ms"] == 12.5
    assert (first.message_ts, first.index_commit, first.review) == ("17000.aaaa", "abc1234", "pending")
    promoted = await log.get("aaaaaaaa00000002")
    assert promoted is not None and (promoted.review, promoted.golden_id) == ("promoted", "fb-aaaaaaaa")
    third = await log.get("bbbbbbbb00000003")
    assert third is not None and (third.answered, third.abstain_reason) == (False, "no_match")
    votes = {(f.answer_id, f.user): f for f in await log.feedback(active=False)}
    assert sorted(votes) == [("aaaaaaaa00000001", "U1"), ("aaaaaaaa00000001", "U2"), ("aaaaaaaa00000002", "U1")]
    vote = votes["aaaaaaaa00000001", "U1"]
    assert (vote.reason, vote.expected) == ("outdated", "see faq.md")
    assert votes["aaaaaaaa00000001", "U2"].withdrawn and votes["aaaaaaaa00000002", "U1"].reaction_vote == "down"
    # still a working log: a new vote on an imported answer, and the candidates
    await log.add_feedback("bbbbbbbb00000003", "U4", "down", "reaction")
    assert [a.answer_id for a, _ in await log.pending_downvoted()] == ["aaaaaaaa00000001", "bbbbbbbb00000003"]
    await db.close()

    # opened again (a restart): nothing imported twice, the newer vote kept; LanceDB left as it was
    db = await open_state(state_config(settings_for(data_dir, state_url)))
    assert len(await AnswerLog(db).feedback(active=False)) == 4
    async with db.begin() as session:
        mark = await session.get(LegacyImport, str(data_dir))
        assert mark is not None and (mark.answers, mark.feedback) == (3, 3)
    await db.close()
    assert set(lancedb.connect(str(data_dir)).list_tables().tables) == {"answers", "feedback"}


async def test_two_processes_starting_at_once_import_once(tmp_path: Path, state_url: str) -> None:
    data_dir = tmp_path / "index"
    build_old_answer_log(data_dir)
    script = (
        "import asyncio, sys, time\n"
        "from pydantic import SecretStr\n"
        "from foundation.settings import Settings\n"
        "from foundation.wiring import state_config\n"
        "from state.opening import open_state\n"
        "async def main(data_dir, url, name, start):\n"
        "    await asyncio.sleep(float(start) - time.time())\n"
        "    db = await open_state(state_config(Settings(_env_file=None, data_dir=data_dir, "
        "database_url=SecretStr(url))))\n"
        "    await db.close()\n"
        "asyncio.run(main(*sys.argv[1:]))\n"
    )
    outcomes = await run_together(script, [str(data_dir), state_url], ["a", "b"])
    assert all(code == 0 for code, _ in outcomes), outcomes
    db = await open_state(state_url)
    log = AnswerLog(db)
    assert len(await log.feedback(active=False)) == 3
    assert [a.answer_id for a, _ in await log.pending_downvoted()] == ["aaaaaaaa00000001"]
    await db.close()


async def test_a_new_data_dir_has_nothing_to_import(tmp_path: Path, state_url: str) -> None:
    db = await open_state(state_config(settings_for(tmp_path / "never-indexed", state_url)))
    assert await AnswerLog(db).feedback(active=False) == []
    await db.close()
