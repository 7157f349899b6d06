"""docsbot's own record of its threads (state/threads.py): the threads it takes part in and their
messages, so a follow-up reads its context there instead of calling conversations.replies.

Revision ID: 0011
Revises: 0010
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: Union[str, Sequence[str], None] = "0010"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "threads",
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("thread_ts", sa.String(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("channel", "thread_ts", name=op.f("pk_threads")),
    )
    op.create_index(op.f("ix_threads_updated_ms"), "threads", ["updated_ms"])
    op.create_table(
        "thread_messages",
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("ts", sa.String(), nullable=False),
        sa.Column("thread_ts", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("bot_id", sa.String(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("channel", "ts", name=op.f("pk_thread_messages")),
    )
    op.create_index(op.f("ix_thread_messages_channel_thread_ts"), "thread_messages", ["channel", "thread_ts"])
    op.create_index(op.f("ix_thread_messages_created_ms"), "thread_messages", ["created_ms"])


def downgrade() -> None:
    op.drop_index(op.f("ix_thread_messages_created_ms"), table_name="thread_messages")
    op.drop_index(op.f("ix_thread_messages_channel_thread_ts"), table_name="thread_messages")
    op.drop_table("thread_messages")
    op.drop_index(op.f("ix_threads_updated_ms"), table_name="threads")
    op.drop_table("threads")
