"""Personal MCP tokens (state/tokens.py): the sha256 of each token, its owner, expiry and revocation.

Revision ID: 0009
Revises: 0008
"""
from typing import Sequence, Union

import sqlalchemy as sa
from alembic import op

revision: str = "0009"
down_revision: Union[str, Sequence[str], None] = "0008"
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    op.create_table(
        "mcp_tokens",
        sa.Column("token_hash", sa.String(), nullable=False),
        sa.Column("token_id", sa.String(), nullable=False),
        sa.Column("user_id", sa.String(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_mcp_tokens")),
        sa.UniqueConstraint("token_id", name=op.f("uq_mcp_tokens_token_id")),
    )
    op.create_index(op.f("ix_mcp_tokens_user_id"), "mcp_tokens", ["user_id"])


def downgrade() -> None:
    op.drop_index(op.f("ix_mcp_tokens_user_id"), table_name="mcp_tokens")
    op.drop_table("mcp_tokens")
