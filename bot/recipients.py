"""Docs owners as Slack people: who gets an owner's digest and who may ask `/docs gaps` as one.

An owner is a name as CODEOWNERS or a front matter `owner` writes it (`@alice`, `@acme/sre`,
`it-team`, `sre@example.com`). The access file's `[owners]` table maps it to Slack user IDs or
user-group IDs (each member counts); an e-mail address it does not list is looked up with
`users.lookupByEmail`. Any other name reaches nobody. Lookups are kept for the life of one
`Recipients` (one digest run or one command), and a failed one reaches nobody.
"""
from __future__ import annotations

import logging
from collections.abc import Iterable

from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.directory import Directory

log = logging.getLogger(__name__)

_LOOKUP_ERRORS = (SlackApiError, SlackClientError, OSError, TimeoutError)


class Recipients:
    def __init__(self, client: AsyncWebClient, directory: Directory) -> None:
        self.client = client
        self.directory = directory
        self._people: dict[str, tuple[str, ...]] = {}

    async def people(self, owner: str) -> tuple[str, ...]:
        """The Slack user IDs an owner name stands for."""
        key = owner.strip().lower()
        if key not in self._people:
            self._people[key] = await self._resolve(key)
        return self._people[key]

    async def _resolve(self, key: str) -> tuple[str, ...]:
        ids = self.directory.policy.owners.get(key)
        if ids is None:
            return await self._by_email(key) if "@" in key[1:] and not key.startswith("@") else ()
        people: list[str] = []
        for slack_id in ids:
            people += sorted(await self.directory.group_members(slack_id)) if slack_id.startswith("S") else [slack_id]
        return tuple(dict.fromkeys(people))

    async def _by_email(self, email: str) -> tuple[str, ...]:
        try:
            user = (await self.client.users_lookupByEmail(email=email))["user"]
        except _LOOKUP_ERRORS as exc:
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.info("owner %s is nobody in Slack (users.lookupByEmail: %s)", email, error)
            return ()
        return () if user.get("deleted") or user.get("is_bot") else (str(user["id"]),)

    async def by_person(self, owners: Iterable[str]) -> dict[str, set[str]]:
        """Slack user ID -> the owner names (of `owners`) that person stands for."""
        found: dict[str, set[str]] = {}
        for owner in sorted(set(owners)):
            for person in await self.people(owner):
                found.setdefault(person, set()).add(owner)
        return found
