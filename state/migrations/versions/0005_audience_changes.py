"""The audience change log every replica reads before an answer (state/audience.py): a channel's
members, sharing or privacy changed, or a person's account did, as Slack told one replica.

Revision ID: 0005
Revises: 0004
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: Union[str, Sequence[str], None] = "0004"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "audience_changes",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("channel_id", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_audience_changes")),
    )


def downgrade() -> None:
    op.drop_table("audience_changes")
