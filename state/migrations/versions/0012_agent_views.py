"""What each person looks at while docsbot's agent view is open (state/agent_views.py).

Revision ID: 0012
Revises: 0011
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: Union[str, Sequence[str], None] = "0011"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "agent_views",
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("updated_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_agent_views")),
    )
    op.create_index(op.f("ix_agent_views_updated_ms"), "agent_views", ["updated_ms"])


def downgrade() -> None:
    op.drop_index(op.f("ix_agent_views_updated_ms"), table_name="agent_views")
    op.drop_table("agent_views")
