"""Personal MCP tokens: what an agent presents to `/mcp` in a person's name (agents/http.py).

A person gets one from Slack (`/docs token`), shown to them once; only its sha256 is stored, so
the database (a backup, a replica's logs) never holds a usable token. A token names its owner
and nothing else: the level it reads at is the owner's, looked up again on every call
(docs/security.md says how soon a lowered level or a deactivation holds). Each token has a short
public id (`list` shows it, `revoke` takes it) and expires DOCSBOT_MCP_TOKEN_DAYS after it was made.
"""
from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import Float, String, select, update
from sqlalchemy.orm import Mapped, mapped_column

from state.db import StateDB
from state.schema import Base

PREFIX = "dbm_"  # what a docsbot MCP token looks like, so a secret scanner can spot one
DAY_S = 86_400.0


class McpToken(Base):
    __tablename__ = "mcp_tokens"

    token_hash: Mapped[str] = mapped_column(String, primary_key=True)  # sha256 hex of the token
    token_id: Mapped[str] = mapped_column(String, unique=True)  # public: listed, and named to revoke it
    user_id: Mapped[str] = mapped_column(String, index=True)
    created_at: Mapped[float] = mapped_column(Float)  # epoch seconds
    expires_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, nullable=True)


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    created_at: float
    expires_at: float


@dataclass(frozen=True)
class Holder:
    """Whose a presented token is, and which of their tokens it is (the rate limit's key)."""

    user_id: str
    token_id: str


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class McpTokens:
    def __init__(self, db: StateDB, days: int, clock: Callable[[], float] = time.time) -> None:
        self.db = db
        self.days = days
        self._clock = clock

    async def issue(self, user_id: str) -> tuple[str, TokenInfo]:
        """A new token of `user_id`: (the token, shown once and never stored, its listing)."""
        token = PREFIX + secrets.token_urlsafe(32)
        now = self._clock()
        row = McpToken(token_hash=digest(token), token_id=secrets.token_hex(4), user_id=user_id, created_at=now,
                       expires_at=now + self.days * DAY_S, revoked_at=None)
        async with self.db.begin() as session:
            session.add(row)
        return token, TokenInfo(row.token_id, row.created_at, row.expires_at)

    async def holder(self, token: str) -> Holder | None:
        """The owner of a token that is neither revoked nor expired; None for any other string."""
        if not token.startswith(PREFIX):
            return None
        query = select(McpToken.user_id, McpToken.token_id).where(
            McpToken.token_hash == digest(token), McpToken.revoked_at.is_(None), McpToken.expires_at > self._clock())
        async with self.db.begin(durable=False) as session:
            found = (await session.execute(query)).first()
        return Holder(found.user_id, found.token_id) if found is not None else None

    async def listed(self, user_id: str) -> list[TokenInfo]:
        """`user_id`'s tokens still in force, oldest first."""
        query = select(McpToken.token_id, McpToken.created_at, McpToken.expires_at).where(
            McpToken.user_id == user_id, McpToken.revoked_at.is_(None), McpToken.expires_at > self._clock()
        ).order_by(McpToken.created_at)
        async with self.db.begin(durable=False) as session:
            return [TokenInfo(*row) for row in (await session.execute(query)).all()]

    async def revoke(self, user_id: str, token_id: str | None) -> int:
        """Revoke one of `user_id`'s tokens by id, or all of them (None); how many were in force."""
        query = update(McpToken).where(McpToken.user_id == user_id, McpToken.revoked_at.is_(None))
        if token_id is not None:
            query = query.where(McpToken.token_id == token_id)
        async with self.db.begin() as session:
            result = await session.execute(query.values(revoked_at=self._clock()))
        return int(getattr(result, "rowcount", 0) or 0)
