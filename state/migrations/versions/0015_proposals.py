"""The docs changes proposed from Slack or `docsbot propose` (state/proposals.py).

Revision ID: 0015
Revises: 0014
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0015"
down_revision: Union[str, Sequence[str], None] = "0014"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "proposals",
        sa.Column("branch", sa.String(), nullable=False),
        sa.Column("page", sa.String(), nullable=False),
        sa.Column("section", sa.String(), nullable=False),
        sa.Column("level", sa.String(), nullable=False),
        sa.Column("url", sa.String(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("proposer", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("thread_ts", sa.String(), nullable=False),
        sa.Column("answer_id", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("created_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("branch", name=op.f("pk_proposals")),
    )
    op.create_index(op.f("ix_proposals_state"), "proposals", ["state"])


def downgrade() -> None:
    op.drop_index(op.f("ix_proposals_state"), table_name="proposals")
    op.drop_table("proposals")
