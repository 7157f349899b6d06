"""`/mcp` on `docsbot serve` (agents/http.py), wired to this bot's engine, state and directory:
a token's owner reads at the level their Slack questions get, looked up the same way
(bot/directory.py) after following the audience changes any replica logged, so a deactivated
account or a lowered level that Slack or the access file announced holds from the next call. An
owner Slack last described more than DOCSBOT_MCP_OWNER_FRESH_S ago is asked about again first
(a deactivation Slack never announced), and the token refused when Slack cannot say."""
from __future__ import annotations

from mcp.server.transport_security import TransportSecuritySettings

from agents.auth_failures import AuthFailures
from agents.http import McpEndpoint, OwnerUnconfirmed
from agents.server import logged_privately
from agents.tools import DocsTools
from bot.app import DocsBot
from bot.directory import Unconfirmed
from rag import Level
from state.db import StateDB
from state.ratelimit import RateLimit


def mcp_endpoint(bot: DocsBot, db: StateDB) -> McpEndpoint:
    services = bot.services
    settings = services.settings
    directory = services.answerer.directory

    async def level_of(user_id: str) -> Level | None:
        await directory.follow_changes()
        try:
            return await directory.account_level(user_id, settings.mcp_owner_fresh_s)
        except Unconfirmed as exc:
            raise OwnerUnconfirmed(str(exc)) from exc

    security = TransportSecuritySettings(allowed_hosts=list(settings.mcp_allowed_hosts),
                                         allowed_origins=list(settings.mcp_allowed_origins))
    return McpEndpoint(DocsTools(services.engine, logged_privately(services.answer_log)),
                       services.tokens, level_of,
                       RateLimit(db, settings.mcp_calls_per_minute), security,
                       AuthFailures(settings.mcp_auth_failures_per_minute, settings.mcp_auth_failures_per_minute_all),
                       stopping=lambda: bot.readiness.stopping)
