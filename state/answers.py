"""Answers the bot posted and the feedback people gave on them.

Tables:
* `answers`, one row per answer: the question and its thread context, who asked and at which
  levels, where it was posted (conversation id and message ts, plain strings), the chunks
  selected with their versions and commits, the answer, citations, abstention, model, prompt
  version, indexed commit, timings, and the review outcome of a 👎 (`pending` until promoted to
  the golden set or rejected).
* `feedback`, one row per (answer, person), enforced by the primary key: the person's current
  vote, their button vote and reaction vote tracked separately, and the 👎 form's reason.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Boolean, ForeignKey, Index, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from state.schema import Base


class AnswerRow(Base):
    __tablename__ = "answers"
    __table_args__ = (Index(None, "channel", "message_ts"),)

    answer_id: Mapped[str] = mapped_column(String, primary_key=True)
    created_ms: Mapped[int] = mapped_column(BigInteger, index=True)
    question: Mapped[str] = mapped_column(Text)
    history: Mapped[list[dict[str, str]]] = mapped_column(JSON)  # [{"speaker", "text"}]
    asker: Mapped[str] = mapped_column(String)
    asker_level: Mapped[str] = mapped_column(String)
    audience_level: Mapped[str] = mapped_column(String)
    level: Mapped[str] = mapped_column(String)  # answered at min(asker, audience)
    channel: Mapped[str] = mapped_column(String)
    message_ts: Mapped[str] = mapped_column(String)
    thread_ts: Mapped[str] = mapped_column(String)
    answer: Mapped[str] = mapped_column(Text)
    answered: Mapped[bool] = mapped_column(Boolean)
    abstain_reason: Mapped[str | None] = mapped_column(String, nullable=True)
    detail: Mapped[str] = mapped_column(Text)
    model: Mapped[str] = mapped_column(String)
    prompt_version: Mapped[str] = mapped_column(String)
    index_commit: Mapped[str] = mapped_column(String)
    retrieved: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    citations: Mapped[list[dict[str, Any]]] = mapped_column(JSON)
    diagnostics: Mapped[dict[str, Any]] = mapped_column(JSON)
    review: Mapped[str] = mapped_column(String, index=True, default="pending")
    golden_id: Mapped[str] = mapped_column(String, default="")
    reviewed_ms: Mapped[int] = mapped_column(BigInteger, default=0)


class FeedbackRow(Base):
    __tablename__ = "feedback"

    answer_id: Mapped[str] = mapped_column(
        String, ForeignKey("answers.answer_id", ondelete="CASCADE"), primary_key=True
    )
    user: Mapped[str] = mapped_column("user_id", String, primary_key=True)
    vote: Mapped[str] = mapped_column(String, default="")  # effective vote; "" once withdrawn
    button_vote: Mapped[str] = mapped_column(String, default="")
    reaction_vote: Mapped[str] = mapped_column(String, default="")
    reason: Mapped[str | None] = mapped_column(String, nullable=True)
    expected: Mapped[str | None] = mapped_column(Text, nullable=True)
    created_ms: Mapped[int] = mapped_column(BigInteger)
    updated_ms: Mapped[int] = mapped_column(BigInteger)
