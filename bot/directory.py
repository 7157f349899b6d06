"""Who is asking and who will read the answer, as access levels (cached lookups, fail closed).

Any lookup that fails makes the person or the conversation `public`: a Slack outage or a
missing scope can only make answers narrower, never wider.

Only people of the organisation that installed the bot (auth.test's Enterprise Grid, else its
workspace) get the access file's defaults, groups and domains: someone from another organisation
(Slack Connect) reads at `public` unless the access file names them by user ID, and so does
everyone when the installing organisation cannot be established.

Every replica hears of an audience change Slack told any of them: the one that got the event
logs it in the shared state database (state/audience.py) and each replica reads what is new
before each answer. An answer above `public` in a conversation others read uses an audience
confirmed with Slack within `fresh_s` (DOCSBOT_AUDIENCE_FRESH_S), so an event Slack never
delivered leaves it stale that long at most, not for the whole lookup TTL.
"""
from __future__ import annotations

import asyncio
import logging
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cachetools import TTLCache
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.web.async_client import AsyncWebClient

from bot.access import AccessFile, AccessPolicy
from rag import Level
from state.audience import AudienceChanges
from state.db import StateUnavailable

log = logging.getLogger(__name__)

_LOOKUP_ERRORS = (SlackApiError, SlackClientError, OSError, TimeoutError)
_MEMBERS_PAGE = 200
_CONCURRENT_LOOKUPS = 8  # users.info calls at once while resolving a private channel's members
_CACHED = 10_000  # entries per lookup cache (the least recently used go first)


class Unconfirmed(RuntimeError):
    """Slack could not be asked to describe an account again (users.info failed)."""


@dataclass(frozen=True)
class _Person:
    """A user as users.info described them; `confirmed_at`: when it was asked (the directory's
    clock), None when the lookup failed (then `public` and taken as active: Slack questions)."""

    level: Level | None
    locale: str
    active: bool
    confirmed_at: float | None

    def confirmed_within(self, seconds: float, now: float) -> bool:
        return self.confirmed_at is not None and now - self.confirmed_at <= seconds


@dataclass(frozen=True)
class Organisation:
    """Who installed the bot, from auth.test: an Enterprise Grid (`enterprise_id`, whose every
    workspace is one organisation), else one workspace (`team_id`)."""

    team_id: str
    enterprise_id: str = ""

    def includes(self, user: dict[str, Any]) -> bool:
        """Whether users.info's `user` belongs to it: the enterprise compared first, else the
        workspace. A stranger (Slack's `is_stranger`), or a user whose organisation is not given, does not."""
        if user.get("is_stranger"):
            return False
        if self.enterprise_id:
            return (user.get("enterprise_user") or {}).get("enterprise_id") == self.enterprise_id
        return bool(self.team_id) and user.get("team_id") == self.team_id


@dataclass(frozen=True)
class Audience:
    """The level an answer in a conversation may use; `direct` means the asker reads it alone.
    `public_channel`: a public channel of this workspace, where anyone in it may read what was
    asked (the only questions ever suggested to other people)."""

    level: Level
    direct: bool = False
    reason: str = ""
    public_channel: bool = False

    def cap(self, asker: Level) -> Level:
        return asker if self.direct else min(asker, self.level)


class Directory:
    """Cached lookups; the channel events (joins, leaves, sharing, privacy) forget a channel's
    audience at once, in every replica sharing `changes`, so the cache can only be stale for
    changes Slack does not announce, and an audience above `public` for `fresh_s` at most."""

    def __init__(self, client: AsyncWebClient, access: AccessFile, ttl_s: float, fresh_s: float | None = None,
                 changes: AudienceChanges | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.access = access
        self.fresh_s = ttl_s if fresh_s is None else fresh_s
        self.changes = changes  # None: this process alone (no replica to tell or hear from)
        self._clock = clock
        self._users: TTLCache[str, _Person] = TTLCache(_CACHED, ttl_s, clock)
        self._groups: TTLCache[str, frozenset[str]] = TTLCache(_CACHED, ttl_s, clock)
        self._audiences: TTLCache[str, tuple[Audience, float]] = TTLCache(_CACHED, ttl_s, clock)  # (, confirmed at)
        # Bumped by every invalidation: a lookup that was running meanwhile is not cached.
        self._audience_epochs: defaultdict[str, int] = defaultdict(int)
        self._lookups = asyncio.Semaphore(_CONCURRENT_LOOKUPS)
        self._home: Organisation | None = None  # auth.test's, once it answered
        self._asking_home = asyncio.Lock()
        self._policy_version = access.version
        self._seen: int | None = None  # the newest change log entry followed; None: not read yet

    @property
    def policy(self) -> AccessPolicy:
        self._follow_policy()
        return self.access.policy

    def _follow_policy(self) -> None:
        """Before using a cached level: if the access file changed (reading the policy re-reads a
        changed file), levels computed on the old one are dropped."""
        if self.access.policy is not None and self.access.version != self._policy_version:
            self._policy_version = self.access.version
            self._users.clear()
            for channel_id in list(self._audiences):
                self.forget_channel(channel_id)

    def forget_channel(self, channel_id: str) -> None:
        """Its members, sharing or privacy changed: the next answer there looks it up again."""
        self._audiences.pop(channel_id, None)
        self._audience_epochs[channel_id] += 1

    def forget_user(self, user_id: str) -> None:
        """A person changed (became a guest, left): their level and every audience are looked up again."""
        self._users.pop(user_id, None)
        self._forget_audiences()

    def _forget_audiences(self) -> None:
        for channel_id in list(self._audiences):
            self.forget_channel(channel_id)

    # -- changes Slack told one replica -----------------------------------------------------------
    async def channel_changed(self, channel_id: str) -> None:
        """Slack said a channel's members, sharing or privacy changed: forgotten here and logged
        for the other replicas."""
        self.forget_channel(channel_id)
        await self._share(channel_id=channel_id)

    async def user_changed(self, user_id: str) -> None:
        """Slack said a person's account changed: forgotten here and logged for the other replicas."""
        self.forget_user(user_id)
        await self._share(user_id=user_id)

    async def _share(self, channel_id: str = "", user_id: str = "") -> None:
        if self.changes is None:
            return
        try:
            await self.changes.record(channel_id=channel_id, user_id=user_id)
        except StateUnavailable as exc:
            log.warning("audience change of %s not logged for the other replicas (%s): they follow it within "
                        "DOCSBOT_AUDIENCE_FRESH_S", channel_id or user_id, exc)

    async def follow_changes(self, readable: bool = True) -> None:
        """Before an answer: forget what any replica logged since the last look (one query on the
        log's key). A log that cannot be read (or, `readable=False`, that the caller just found
        unreachable) trusts no cached audience: each is looked up again."""
        if self.changes is None:
            return
        if not readable:
            self._forget_audiences()
            return
        try:
            if self._seen is None:  # what was cached before the first look predates nothing known
                self._seen = await self.changes.newest()
                self._users.clear()
                self._forget_audiences()
                return
            news = await self.changes.since(self._seen)
        except StateUnavailable as exc:
            log.warning("audience change log unreadable (%s): every audience is looked up again", exc)
            self._forget_audiences()
            return
        for change in news:
            if change.user_id:
                self.forget_user(change.user_id)
            if change.channel_id:
                self.forget_channel(change.channel_id)
            self._seen = change.seq

    # -- people ---------------------------------------------------------------------------------
    async def user_level(self, user_id: str) -> Level | None:
        """The user's level; None for bots and apps (they read nothing and count for nothing)."""
        return (await self._user(user_id)).level

    async def account_level(self, user_id: str, confirmed_within_s: float | None = None) -> Level | None:
        """The level of an active person's account; None for a deactivated one, a bot or an app:
        what a personal token (an MCP agent's, agents/http.py) reads at, cached like `user_level`
        and forgotten, like it, when Slack says the account changed or the access file changes.

        `confirmed_within_s`: the account is described by Slack (users.info) again when it last
        was longer ago than that, so a deactivation whose `user_change` never arrived holds within
        it; Unconfirmed when Slack cannot be asked (the cached account, active or not, is not used)."""
        person = await self._user(user_id)
        if confirmed_within_s is not None and not person.confirmed_within(confirmed_within_s, self._clock()):
            self._users.pop(user_id, None)
            person = await self._user(user_id)
            if person.confirmed_at is None:
                raise Unconfirmed(f"Slack could not confirm the account of {user_id}")
        return person.level if person.active else None

    async def user_language(self, user_id: str) -> str:
        """The primary subtag of the user's Slack locale ("ja" of "ja-JP"), "" when unknown: the
        language a question is answered in where the docs have it (rag/retrieval.py)."""
        locale = (await self._user(user_id)).locale
        return locale.replace("_", "-").split("-", 1)[0].lower()

    async def _user(self, user_id: str) -> _Person:
        """The user as one users.info call described them, looked up once per TTL."""
        self._follow_policy()
        cached = self._users.get(user_id)
        if cached is None:
            cached = await self._resolve_user(user_id)
            self._users[user_id] = cached
        return cached

    async def _bounded_user_level(self, user_id: str) -> Level | None:
        async with self._lookups:
            return await self.user_level(user_id)

    async def _resolve_user(self, user_id: str) -> _Person:
        asked_at = self._clock()
        try:  # the installing organisation is asked at the same time, the first time: no wait added
            described, home = await asyncio.gather(self.client.users_info(user=user_id, include_locale=True),
                                                   self.home())
            user: dict[str, Any] = described["user"]
        except _LOOKUP_ERRORS as exc:
            log.warning("users.info %s failed (%s): treating the user as public", user_id, _error(exc))
            return _Person(Level.public, "", True, None)
        locale = user.get("locale")
        return _Person(await self._level(user_id, user, home), locale if isinstance(locale, str) else "",
                       not user.get("deleted"), asked_at)

    async def _level(self, user_id: str, user: dict[str, Any], home: Organisation | None) -> Level | None:
        """The level of a user users.info described: the access file's, a guest's `public`, and
        another organisation's (or anyone's, `home` unknown) `public` unless named by ID."""
        if user.get("is_bot") or user.get("is_app_user") or user_id == "USLACKBOT":
            return None
        if user.get("deleted") or user.get("is_restricted") or user.get("is_ultra_restricted"):
            return Level.public
        if user_id in self.policy.users:
            return self.policy.users[user_id]
        if home is None or not home.includes(user):  # another organisation's (Slack Connect): named by ID, or public
            return Level.public
        granted = [level for group, level in self.policy.groups.items() if user_id in await self._group(group)]
        email = (user.get("profile") or {}).get("email") or ""
        if (by_domain := self.policy.domain_level(email)) is not None:
            granted.append(by_domain)
        return max(granted, default=self.policy.member_default)

    def installed_by(self, team_id: str, enterprise_id: str) -> None:
        """The installing organisation, as an auth.test made elsewhere (Bolt's, bot/middleware.py) found it."""
        if self._home is None:
            self._home = Organisation(team_id, enterprise_id)

    async def home(self) -> Organisation | None:
        """The installing organisation, asked of Slack once (auth.test, one call at a time) unless
        `installed_by` told it first; None while that fails (asked again at the next lookup)."""
        async with self._asking_home:
            if self._home is None:
                try:
                    auth = await self.client.auth_test()
                except _LOOKUP_ERRORS as exc:
                    log.warning("auth.test failed (%s): people the access file does not name are public", _error(exc))
                    return None
                self._home = Organisation(auth.get("team_id") or "", auth.get("enterprise_id") or "")
        return self._home

    async def group_members(self, group_id: str) -> frozenset[str]:
        """The members of a Slack user group (none when the lookup fails), cached like levels."""
        return await self._group(group_id)

    async def _group(self, group_id: str) -> frozenset[str]:
        members = self._groups.get(group_id)
        if members is None:
            try:
                members = frozenset((await self.client.usergroups_users_list(usergroup=group_id))["users"])
            except _LOOKUP_ERRORS as exc:
                log.warning("usergroups.users.list %s failed (%s): it grants nothing", group_id, _error(exc))
                members = frozenset()
            self._groups[group_id] = members
        return members

    # -- conversations --------------------------------------------------------------------------
    async def audience(self, channel_id: str, asker: Level = Level.restricted) -> Audience:
        """Who reads `channel_id`. When an answer to `asker` there could use a document above
        `public` and others read it, the audience is confirmed with Slack again unless it was
        within `fresh_s` (a failed lookup is `public`)."""
        self._follow_policy()
        cached = self._audiences.get(channel_id)
        if cached is not None and not self._unconfirmed(*cached, asker):
            return cached[0]
        epoch, confirmed_at = self._audience_epochs[channel_id], self._clock()
        audience = await self._resolve_audience(channel_id)
        if epoch == self._audience_epochs[channel_id]:
            self._audiences[channel_id] = (audience, confirmed_at)
        return audience

    def _unconfirmed(self, audience: Audience, confirmed_at: float, asker: Level) -> bool:
        above_public = not audience.direct and min(asker, audience.level) > Level.public
        return above_public and self._clock() - confirmed_at > self.fresh_s

    async def _resolve_audience(self, channel_id: str) -> Audience:
        try:
            info: dict[str, Any] = (await self.client.conversations_info(channel=channel_id))["channel"]
        except _LOOKUP_ERRORS as exc:
            log.warning("conversations.info %s failed (%s): treating it as public", channel_id, _error(exc))
            return Audience(Level.public, reason="a conversation I could not look up")
        if info.get("is_im"):
            return Audience(Level.restricted, direct=True, reason="a direct message")
        if any(info.get(flag) for flag in ("is_ext_shared", "is_shared", "is_org_shared", "is_pending_ext_shared")):
            return Audience(Level.public, reason="a channel shared with another organisation")
        listed = self.policy.channels.get(channel_id)
        if not (info.get("is_private") or info.get("is_mpim")):
            if listed is not None:
                return Audience(listed, reason="a channel whose level is set in the access file", public_channel=True)
            return Audience(self.policy.public_channel_default, reason="a public channel", public_channel=True)
        lowest = await self._lowest_member(channel_id)
        if listed is not None and listed < lowest:
            return Audience(listed, reason="a channel whose level is set in the access file")
        return Audience(lowest, reason="a private conversation whose members read at different levels")

    async def _lowest_member(self, channel_id: str) -> Level:
        lowest: Level | None = None
        cursor = ""
        while True:
            try:
                page = await self.client.conversations_members(channel=channel_id, limit=_MEMBERS_PAGE, cursor=cursor)
            except _LOOKUP_ERRORS as exc:
                log.warning("conversations.members %s failed (%s): treating it as public", channel_id, _error(exc))
                return Level.public
            levels = [level for level in await asyncio.gather(*map(self._bounded_user_level, page["members"]))
                      if level is not None]
            lowest = min([*levels, *([lowest] if lowest is not None else [])], default=None)
            if lowest == Level.public:
                return lowest
            cursor = (page.get("response_metadata") or {}).get("next_cursor") or ""
            if not cursor:
                return Level.public if lowest is None else lowest


def _error(exc: BaseException) -> str:
    if isinstance(exc, SlackApiError):
        return str(exc.response.get("error", "error"))
    return type(exc).__name__
