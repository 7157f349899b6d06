"""`python -m eval candidates|promote|reject`: review thumbs-down answers from the answer log.

  candidates [--since DATE] [--json]      pending 👎 answers grouped by likely cause
  promote ID --expect PATH... [--abstain] append the case to eval/golden_feedback.jsonl
  reject ID                               dismiss the candidate

ID is an answer id (or a unique prefix of 6+ characters). A promoted case keeps the question, the
thread context and the level it was answered at, and records the commits and chunk hashes of the
documents involved (`"feedback"` in the golden line), so `python -m eval run` can report cases
whose documents changed since the feedback. Exit status: 0 done, 2 bad input.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from insights.candidates import find_candidates, index_docs, render, used_docs
from foundation.settings import Settings
from eval.golden import EVAL_DIR, GoldenError, load_golden, parse_case
from foundation.errors import ACTIONABLE
from foundation.wiring import index_config, open_state_db
from rag import Index, StoreError, open_index
from state.answers import AnswerLog, AnswerLogError, Feedback, LoggedAnswer
from state.db import StateUnavailable
from state.gaps import Reader, quoted

FEEDBACK_GOLDEN = EVAL_DIR / "golden_feedback.jsonl"


def build_parser(command: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=f"python -m eval {command}", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    if command == "candidates":
        parser.add_argument("--since", type=since_ms, metavar="DATE",
                            help="only 👎 given on or after this date (YYYY-MM-DD[THH:MM], UTC)")
        parser.add_argument("--json", action="store_true", help="print the candidates as JSON")
        return parser
    parser.add_argument("id", help="answer id, or a unique prefix of 6+ characters")
    if command == "promote":
        parser.add_argument("--expect", nargs="+", default=[], metavar="PATH",
                            help="doc path(s) that should answer it (relative to the docs folder)")
        parser.add_argument("--abstain", action="store_true", help="the right answer is an abstention")
        parser.add_argument("--golden", type=Path, default=FEEDBACK_GOLDEN,
                            help=f"golden file to append to (default {FEEDBACK_GOLDEN})")
    return parser


def since_ms(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date like 2026-11-29 or 2026-11-29T14:00") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)


async def candidates(args: argparse.Namespace, log: AnswerLog, store: Index) -> int:
    found = find_candidates(await log.pending_downvoted(), store, args.since)
    print(json.dumps([c.to_json(Reader()) for c in found], indent=2) if args.json else render(found, Reader()))
    return 0


async def pending(log: AnswerLog, ref: str) -> LoggedAnswer:
    answer = await log.resolve(ref)
    if answer.review != "pending":
        extra = f" as {answer.golden_id}" if answer.golden_id else ""
        raise AnswerLogError(f"answer {answer.answer_id} was already {answer.review}{extra}")
    return answer


def golden_line(
    answer: LoggedAnswer, votes: list[Feedback], store: Index, expect: list[str], abstain: bool
) -> dict[str, Any]:
    """The golden case of a 👎 answer (`votes`: its 👎), with what its documents looked like at feedback time."""
    docs = used_docs(answer)
    docs |= {p: s for p, s in index_docs(store, expect).items() if p not in docs}
    line: dict[str, Any] = {
        "id": f"fb-{answer.answer_id[:8]}",
        "question": answer.question,
        "gold_doc_ids": expect,
        "answerable": not abstain,
        "level": answer.level,
    }
    if answer.history:
        line["history"] = answer.history
    if abstain and answer.abstain_reason == "no_access":
        line["expect_reason"] = "no_access"
    line["feedback"] = {
        "answer_id": answer.answer_id,
        "asked_at": datetime.fromtimestamp(answer.created_ms / 1000, timezone.utc).isoformat(timespec="seconds"),
        "reasons": sorted({v.reason for v in votes if v.reason}),
        "expected": [v.expected for v in votes if v.expected],
        "docs": {p: s.to_json() for p, s in sorted(docs.items())},
    }
    return line


async def promote(args: argparse.Namespace, log: AnswerLog, store: Index) -> int:
    answer = await pending(log, args.id)
    if not answer.public:  # a golden set is a file in the repository: everyone with a clone reads it
        raise AnswerLogError(f"answer {answer.answer_id} was asked in a DM, the assistant panel or a private "
                             "channel: its words stay out of the golden set (reject it, or write the case yourself)")
    votes = [v for v in await log.feedback(answer.answer_id) if v.vote == "down"]
    if not votes:
        raise AnswerLogError(f"answer {answer.answer_id} has no thumbs-down: it is not a candidate")
    expect = list(dict.fromkeys(p.strip().lstrip("./") for p in args.expect))
    if not expect and not args.abstain:
        raise AnswerLogError("give the doc(s) that should answer it with --expect PATH..., or --abstain")
    unknown = [p for p in expect if p not in store.doc_hashes()]
    if unknown:
        raise AnswerLogError(f"not in the index: {', '.join(unknown)} (paths are relative to the docs folder)")
    line = golden_line(answer, votes, store, expect, args.abstain)
    golden: Path = args.golden
    parse_case(json.dumps(line), "the promoted case")  # the golden loader must accept it
    if golden.is_file() and any(c.id == line["id"] for c in load_golden([golden])):
        raise AnswerLogError(f"{golden} already has a case {line['id']}")
    golden.parent.mkdir(parents=True, exist_ok=True)
    existing = golden.read_text(encoding="utf-8") if golden.is_file() else ""
    with golden.open("a", encoding="utf-8") as out:
        separator = "" if not existing or existing.endswith("\n") else "\n"
        out.write(separator + json.dumps(line, ensure_ascii=False) + "\n")
    await log.set_review(answer.answer_id, "promoted", line["id"])
    kind = "an abstention" if args.abstain else "answerable from " + ", ".join(expect)
    print(f"promoted {answer.answer_id} as {line['id']} ({kind}, level {answer.level}) to {golden}")
    return 0


async def reject(args: argparse.Namespace, log: AnswerLog, store: Index) -> int:
    answer = await pending(log, args.id)
    await log.set_review(answer.answer_id, "rejected")
    print(f"rejected {answer.answer_id}" + (f": {answer.question!r}" if quoted(Reader(), [answer]) else ""))
    return 0


COMMANDS = {"candidates": candidates, "promote": promote, "reject": reject}


def main(argv: list[str], settings: Settings | None = None) -> int:
    """Entry point of the `python -m eval` dispatcher (argv[0] is the command name)."""
    command = argv[0]
    args = build_parser(command).parse_args(argv[1:])
    settings = settings or Settings()
    try:
        return asyncio.run(_run(command, args, settings))
    except (AnswerLogError, GoldenError, StoreError, StateUnavailable, *ACTIONABLE, OSError) as exc:
        print(f"eval {command}: error: {exc}", file=sys.stderr)
        return 2


async def _run(command: str, args: argparse.Namespace, settings: Settings) -> int:
    state = await open_state_db(settings)
    try:
        return await COMMANDS[command](args, AnswerLog(state, settings.answer_log_days),
                                           open_index(index_config(settings)))
    finally:
        await state.close()
