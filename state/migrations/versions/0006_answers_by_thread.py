"""Answers found by their thread: a message in a channel thread is a follow-up only when the bot
answered its author there recently (bot/followups.py), looked up for every thread reply in the
channels the bot is in, so by an index rather than a scan of the channel's answers.

Revision ID: 0006
Revises: 0005
"""
from typing import Sequence, Union

from alembic import op

revision: str = "0006"
down_revision: Union[str, Sequence[str], None] = "0005"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.create_index(batch.f("ix_answers_channel_thread_ts"), ["channel", "thread_ts"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("answers") as batch:
        batch.drop_index(batch.f("ix_answers_channel_thread_ts"))
