"""Answers and feedback (moved out of LanceDB), event dedupe keys, per-user rate windows, and
the marks of one-time imports of the old LanceDB answer log.

Revision ID: 0001
Revises:
Create Date: 2026-12-01 15:10:51.876235
"""
from typing import Sequence, Union

from alembic import op
import sqlalchemy as sa


# revision identifiers, used by Alembic.
revision: str = '0001'
down_revision: Union[str, Sequence[str], None] = None
branch_labels: Union[str, Sequence[str], None] = None
depends_on: Union[str, Sequence[str], None] = None


def upgrade() -> None:
    """Upgrade schema."""
    op.create_table('answers',
    sa.Column('answer_id', sa.String(), nullable=False),
    sa.Column('created_ms', sa.BigInteger(), nullable=False),
    sa.Column('question', sa.Text(), nullable=False),
    sa.Column('history', sa.JSON(), nullable=False),
    sa.Column('asker', sa.String(), nullable=False),
    sa.Column('asker_level', sa.String(), nullable=False),
    sa.Column('audience_level', sa.String(), nullable=False),
    sa.Column('level', sa.String(), nullable=False),
    sa.Column('channel', sa.String(), nullable=False),
    sa.Column('message_ts', sa.String(), nullable=False),
    sa.Column('thread_ts', sa.String(), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('answered', sa.Boolean(), nullable=False),
    sa.Column('abstain_reason', sa.String(), nullable=True),
    sa.Column('detail', sa.Text(), nullable=False),
    sa.Column('model', sa.String(), nullable=False),
    sa.Column('prompt_version', sa.String(), nullable=False),
    sa.Column('index_commit', sa.String(), nullable=False),
    sa.Column('retrieved', sa.JSON(), nullable=False),
    sa.Column('citations', sa.JSON(), nullable=False),
    sa.Column('diagnostics', sa.JSON(), nullable=False),
    sa.Column('review', sa.String(), nullable=False),
    sa.Column('golden_id', sa.String(), nullable=False),
    sa.Column('reviewed_ms', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('answer_id', name=op.f('pk_answers'))
    )
    with op.batch_alter_table('answers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_answers_channel_message_ts'), ['channel', 'message_ts'], unique=False)
        batch_op.create_index(batch_op.f('ix_answers_created_ms'), ['created_ms'], unique=False)
        batch_op.create_index(batch_op.f('ix_answers_review'), ['review'], unique=False)

    op.create_table('dedupe_keys',
    sa.Column('key', sa.String(), nullable=False),
    sa.Column('expires_at', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_dedupe_keys'))
    )
    with op.batch_alter_table('dedupe_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_dedupe_keys_expires_at'), ['expires_at'], unique=False)

    op.create_table('legacy_imports',
    sa.Column('source', sa.String(), nullable=False),
    sa.Column('imported_ms', sa.BigInteger(), nullable=False),
    sa.Column('answers', sa.Integer(), nullable=False),
    sa.Column('feedback', sa.Integer(), nullable=False),
    sa.PrimaryKeyConstraint('source', name=op.f('pk_legacy_imports'))
    )
    op.create_table('rate_windows',
    sa.Column('user_id', sa.String(), nullable=False),
    sa.Column('stamps', sa.JSON(), nullable=False),
    sa.PrimaryKeyConstraint('user_id', name=op.f('pk_rate_windows'))
    )
    op.create_table('feedback',
    sa.Column('answer_id', sa.String(), nullable=False),
    sa.Column('user_id', sa.String(), nullable=False),
    sa.Column('vote', sa.String(), nullable=False),
    sa.Column('button_vote', sa.String(), nullable=False),
    sa.Column('reaction_vote', sa.String(), nullable=False),
    sa.Column('reason', sa.String(), nullable=True),
    sa.Column('expected', sa.Text(), nullable=True),
    sa.Column('created_ms', sa.BigInteger(), nullable=False),
    sa.Column('updated_ms', sa.BigInteger(), nullable=False),
    sa.ForeignKeyConstraint(['answer_id'], ['answers.answer_id'], name=op.f('fk_feedback_answer_id_answers'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('answer_id', 'user_id', name=op.f('pk_feedback'))
    )


def downgrade() -> None:
    """Downgrade schema."""
    op.drop_table('feedback')
    op.drop_table('rate_windows')
    op.drop_table('legacy_imports')
    with op.batch_alter_table('dedupe_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_dedupe_keys_expires_at'))

    op.drop_table('dedupe_keys')
    with op.batch_alter_table('answers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_answers_review'))
        batch_op.drop_index(batch_op.f('ix_answers_created_ms'))
        batch_op.drop_index(batch_op.f('ix_answers_channel_message_ts'))

    op.drop_table('answers')
