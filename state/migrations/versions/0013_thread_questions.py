"""Which recorded thread messages docsbot took as questions (state/threads.py `question`): its
asker's follow-up written while that answer is still being written is one, on any replica.
Messages recorded before this revision count as no question (their answers are in the answer log).

Revision ID: 0013
Revises: 0012
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0013"
down_revision: Union[str, Sequence[str], None] = "0012"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    with op.batch_alter_table("thread_messages") as batch:
        batch.add_column(sa.Column("question", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table("thread_messages") as batch:
        batch.drop_column("question")
