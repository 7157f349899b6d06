"""`/docs token`, `/docs token list`, `/docs token revoke ID|all`: a person's tokens for their AI
agents (the MCP server at `/mcp`, agents/http.py). A new token is shown once, only to the person
who asked, through the command's response URL (an ephemeral reply): never posted in a
conversation, never logged, never stored (only its sha256 is, state/tokens.py)."""
from __future__ import annotations

import logging
import re
import time

from bot.notes import Notes
from bot.services import Services
from state.db import StateUnavailable
from state.tokens import TokenInfo

log = logging.getLogger(__name__)

TOKEN = re.compile(r"token(?:\s+(list|revoke)(?:\s+(\S+))?)?")  # /docs token [list | revoke ID|all]
USAGE = "`/docs token` makes a token for your AI agent; `/docs token list` lists yours; `/docs token revoke ID|all`."
UNAVAILABLE = "Tokens can't be reached right now (the state database is unavailable): please try again shortly."


async def token_command(services: Services, user: str, match: re.Match[str], notes: Notes) -> None:
    action, target = match.group(1), match.group(2)
    tokens = services.tokens
    try:
        if action is None:
            if await services.answerer.directory.account_level(user) is None:
                await notes.tell("Only people with an active account can have a token.")
                return
            token, info = await tokens.issue(user)
            await notes.reply({"text": issued(token, info)})
        elif action == "list":
            await notes.tell(listing(await tokens.listed(user)))
        elif target is None:
            await notes.tell(USAGE)
        else:
            revoked = await tokens.revoke(user, None if target == "all" else target)
            await notes.tell(f"Revoked {revoked} token(s)." if revoked else f"You have no token `{target}` in force.")
    except StateUnavailable as exc:
        log.warning("/docs token: %s", exc)
        await notes.tell(UNAVAILABLE)


def issued(token: str, info: TokenInfo) -> str:
    return (f"Your token for AI agents (MCP), shown this once and only to you:\n```{token}```\n"
            f"Give it to your agent as the header `Authorization: Bearer <token>` for this bot's `/mcp` "
            f"address (the README shows how). It reads the docs at your level, expires on "
            f"{_day(info.expires_at)}, and `/docs token revoke {info.token_id}` revokes it.")


def listing(tokens: list[TokenInfo]) -> str:
    if not tokens:
        return "You have no tokens for AI agents in force. `/docs token` makes one."
    return "Your tokens for AI agents:\n" + "\n".join(
        f"• `{t.token_id}`: made {_day(t.created_at)}, expires {_day(t.expires_at)}" for t in tokens)


def _day(epoch: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(epoch))
