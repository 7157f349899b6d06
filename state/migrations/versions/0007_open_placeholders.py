"""Open placeholders shared by every replica: a placeholder left behind by a process that died is
ended by another (or the restarted one) once its owner's lease expires, exactly once.

Revision ID: 0007
Revises: 0006
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: Union[str, Sequence[str], None] = "0006"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "open_placeholders",
        sa.Column("answer_id", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("ts", sa.String(), nullable=False),
        sa.Column("thread_ts", sa.String(), nullable=True),
        sa.Column("asker", sa.String(), nullable=False),
        sa.Column("question", sa.Text(), nullable=False),
        sa.Column("surface", sa.String(), nullable=False),
        sa.Column("owner", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("answer_id", name=op.f("pk_open_placeholders")),
    )
    op.create_index(op.f("ix_open_placeholders_owner"), "open_placeholders", ["owner"])
    op.create_index(op.f("ix_open_placeholders_expires_at"), "open_placeholders", ["expires_at"])


def downgrade() -> None:
    op.drop_index(op.f("ix_open_placeholders_expires_at"), table_name="open_placeholders")
    op.drop_index(op.f("ix_open_placeholders_owner"), table_name="open_placeholders")
    op.drop_table("open_placeholders")
