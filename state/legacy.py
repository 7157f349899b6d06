"""One-time import of the answer log kept in LanceDB beside the index before the state store.

Earlier versions wrote answers and votes to `answers`/`feedback` tables in the index's LanceDB
database. The first time a state database is opened for a data dir, those rows are copied into
it in one transaction, together with a `legacy_imports` row that marks the data dir as done, so
the import runs once however many processes start at the same moment. The LanceDB tables are
left in place, untouched (LanceDB OSS cannot rename tables); nothing reads them any more, and
they can be dropped once the import has been checked.
"""
from __future__ import annotations

import asyncio
import json
import logging
import time
from pathlib import Path
from typing import Any

from sqlalchemy import BigInteger, Integer, String, insert, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Mapped, mapped_column

import rag  # its names load on use: LanceDB only when there is an old answer log to read
from state.answers import AnswerRow, FeedbackRow
from state.db import StateDB
from state.schema import Base

log = logging.getLogger(__name__)

ANSWERS, FEEDBACK = "answers", "feedback"
_JSON_COLUMNS = ("history", "retrieved", "citations", "diagnostics")
_FEEDBACK_COLUMNS = ("answer_id", "user", "vote", "button_vote", "reaction_vote", "reason", "expected",
                     "created_ms", "updated_ms")


class LegacyImport(Base):
    __tablename__ = "legacy_imports"

    source: Mapped[str] = mapped_column(String, primary_key=True)  # the data dir imported from
    imported_ms: Mapped[int] = mapped_column(BigInteger)
    answers: Mapped[int] = mapped_column(Integer)
    feedback: Mapped[int] = mapped_column(Integer)


async def import_lancedb_answer_log(db: StateDB, data_dir: str) -> tuple[int, int] | None:
    """Copy the LanceDB answer log of `data_dir` into the state database, once.

    Returns (answers, votes) imported, or None when this data dir was imported before (or
    another process is importing it right now)."""
    async with db.begin() as session:
        if await session.get(LegacyImport, data_dir) is not None:
            return None
    try:
        answers, feedback = await asyncio.to_thread(read_lancedb_answer_log, data_dir)
    except (OSError, RuntimeError, ValueError) as exc:  # what lance raises for unreadable tables
        log.warning("could not read the LanceDB answer log in %s (%s); it is tried again at the next start",
                    data_dir, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
        return None
    try:
        async with db.begin() as session:
            known = set(await session.scalars(select(AnswerRow.answer_id)))
            new_answers = [row for row in answers if row["answer_id"] not in known]
            kept = known | {row["answer_id"] for row in answers}
            votes = [row for row in feedback if row["answer_id"] in kept]
            if new_answers:
                await session.execute(insert(AnswerRow), new_answers)
            if votes:
                # A vote already in the state store is newer than its LanceDB copy: keep it.
                have = set((await session.execute(select(FeedbackRow.answer_id, FeedbackRow.user))).tuples())
                votes = [v for v in votes if (v["answer_id"], v["user"]) not in have]
                if votes:
                    await session.execute(insert(FeedbackRow), votes)
            session.add(LegacyImport(source=data_dir, imported_ms=int(time.time() * 1000),
                                     answers=len(new_answers), feedback=len(votes)))
    except IntegrityError:
        return None  # another process imported it at the same moment
    if new_answers or votes:
        log.warning("imported %d answers and %d votes from the LanceDB answer log in %s "
                    "(its tables are left in place, unused)", len(new_answers), len(votes), data_dir)
    return len(new_answers), len(votes)


def read_lancedb_answer_log(data_dir: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of the old `answers` and `feedback` tables, as state-table values; none when
    the data dir has no such tables."""
    if "://" not in data_dir and not Path(data_dir).is_dir():
        return [], []
    tables = rag.read_tables(data_dir, ANSWERS, FEEDBACK)
    answers, feedback = tables[ANSWERS], tables[FEEDBACK]
    for row in answers:
        for name in _JSON_COLUMNS:
            row[name] = json.loads(row[name])
    return answers, [{name: row[name] for name in _FEEDBACK_COLUMNS} for row in feedback]
