"""The access file: who may read which level, which channels have a level, who the admins are,
where each docs owner's digest goes. A TOML file (path in `DOCSBOT_ACCESS_FILE`); its format,
every key with an example, is documented in docs/access.md (bot/access.example.toml is a copy to
start from). Read again when it changes; a file that cannot be used is refused with the entry.
"""
from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.channel_rules import NO_RULES, ChannelRules, parse_channels
from rag import Level
from foundation.toml_file import read_toml

log = logging.getLogger(__name__)

_SECTIONS = {"admins", "defaults", "users", "groups", "domains", "channels", "owners"}
_SLACK_ID = re.compile(r"[UWS][A-Z0-9_]+")  # a user (U…, W… on Enterprise Grid) or a user group (S…)
_DEFAULTS = {"member", "public_channel"}


class AccessFileError(ValueError):
    """The access file cannot be used; the message names the file and the bad entry."""


@dataclass(frozen=True)
class AccessPolicy:
    admins: frozenset[str] = frozenset()
    member_default: Level = Level.public
    public_channel_default: Level = Level.public
    users: dict[str, Level] = field(default_factory=dict)
    groups: dict[str, Level] = field(default_factory=dict)
    domains: dict[str, Level] = field(default_factory=dict)
    channels: dict[str, Level] = field(default_factory=dict)
    channel_rules: dict[str, ChannelRules] = field(default_factory=dict)  # scope, follow-ups
    owners: dict[str, tuple[str, ...]] = field(default_factory=dict)  # owner name (lower case) -> Slack IDs

    def is_admin(self, user_id: str) -> bool:
        return user_id in self.admins

    def rules(self, channel: str) -> ChannelRules:
        return self.channel_rules.get(channel, NO_RULES)

    def domain_level(self, email: str) -> Level | None:
        _, _, domain = email.rpartition("@")
        return self.domains.get(domain.lower()) if domain else None


class AccessFile:
    """The policy in force, read again when the file changes on disk (checked at most every
    `check_every_s`, on use), so an edit needs no restart. A new file that cannot be used keeps
    the previous policy in force; a file that is gone fails closed to the defaults (everyone
    public, no admins) until it is back. Either way `on_invalid(previous, what)` is called once
    (the bot DMs the previous policy's admins `what` happened)."""

    def __init__(self, path: str | Path | None, policy: AccessPolicy | None = None, check_every_s: float = 1.0) -> None:
        self.path = Path(path) if path else None
        self._policy = policy if policy is not None else load_access(self.path)
        self.check_every_s = check_every_s
        self.version = 0  # bumped on every reload: caches built on the old policy are dropped
        self.on_invalid: Callable[[AccessPolicy, str], None] | None = None
        self._stamp = self._stat()
        self._checked = time.monotonic()

    @classmethod
    def fixed(cls, policy: AccessPolicy) -> "AccessFile":
        """A policy that is not read from a file (tests, the console's demo policy)."""
        return cls(None, policy)

    @property
    def policy(self) -> AccessPolicy:
        if self.path is not None and time.monotonic() - self._checked >= self.check_every_s:
            self._checked = time.monotonic()
            self._reload_if_changed()
        return self._policy

    def _stat(self) -> tuple[int, int] | None:
        if self.path is None:
            return None
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _reload_if_changed(self) -> None:
        stamp = self._stat()
        if stamp == self._stamp:
            return
        self._stamp = stamp
        previous = self._policy
        try:
            policy = load_access(self.path)
        except AccessFileError as exc:
            if stamp is not None:  # there, but unusable: a typo must not lock everyone out
                log.warning("%s: the previous access policy stays in force", exc)
                self._tell(previous, f"The access file was changed but cannot be used, so the previous policy "
                                     f"stays in force: {exc}")
                return
            policy = AccessPolicy()
            log.warning("%s: every reader is public and nobody is an admin until it is back", exc)
            self._tell(previous, f"The access file is gone ({exc}), so I answer everyone from public docs only "
                                 "and nobody is an admin until it is back.")
        self._policy = policy
        self.version += 1
        if stamp is not None:
            log.warning("access file %s reloaded", self.path)

    def _tell(self, previous: AccessPolicy, what: str) -> None:
        if self.on_invalid is not None:
            self.on_invalid(previous, what)


async def tell_admins(client: AsyncWebClient, admins: frozenset[str], text: str) -> None:
    """A DM to each admin: what happened to the access file, and what is in force now."""
    for admin in sorted(admins):
        try:
            channel = (await client.conversations_open(users=admin))["channel"]["id"]
            await client.chat_postMessage(channel=channel, text=text)
        except SlackApiError as exc:
            log.warning("could not tell admin %s about the access file: %s", admin, exc.response.get("error"))


def load_access(path: str | Path | None) -> AccessPolicy:
    """Read the access file; no path means everyone is a public reader with no admins."""
    if not path:
        return AccessPolicy()
    path = Path(path)
    _, data = read_toml(path, "access file", AccessFileError)
    return parse_access(data, f"access file {path}")


def parse_access(data: dict[str, Any], source: str = "access file") -> AccessPolicy:
    unknown = set(data) - _SECTIONS
    if unknown:
        raise AccessFileError(f"{source}: unknown section(s) {sorted(unknown)} (expected {sorted(_SECTIONS)})")
    admins = data.get("admins", [])
    if not isinstance(admins, list) or not all(isinstance(a, str) for a in admins):
        raise AccessFileError(f"{source}: `admins` must be a list of user IDs")
    defaults = _levels(data, "defaults", source)
    try:
        channels, rules = parse_channels(data.get("channels", {}), source)
    except ValueError as exc:
        raise AccessFileError(str(exc)) from None
    if set(defaults) - _DEFAULTS:
        raise AccessFileError(f"{source}: [defaults] accepts only {sorted(_DEFAULTS)}")
    return AccessPolicy(
        admins=frozenset(admins),
        member_default=defaults.get("member", Level.public),
        public_channel_default=defaults.get("public_channel", Level.public),
        users=_levels(data, "users", source),
        groups=_levels(data, "groups", source),
        domains={k.lower(): v for k, v in _levels(data, "domains", source).items()},
        channels=channels,
        channel_rules=rules,
        owners=_owners(data, source),
    )


def _owners(data: dict[str, Any], source: str) -> dict[str, tuple[str, ...]]:
    table = data.get("owners", {})
    if not isinstance(table, dict):
        raise AccessFileError(f"{source}: [owners] must be a table of owner = \"Slack ID\" or [\"ID\", ...]")
    owners = {}
    for name, value in table.items():
        ids = [value] if isinstance(value, str) else value
        if not isinstance(ids, list) or not ids or not all(isinstance(i, str) and _SLACK_ID.fullmatch(i) for i in ids):
            raise AccessFileError(f"{source}: [owners] {name}: expected a Slack user ID (U…), user group ID (S…) "
                                  f"or a list of them, got {value!r}")
        owners[name.strip().lower()] = tuple(ids)
    return owners


def _levels(data: dict[str, Any], section: str, source: str) -> dict[str, Level]:
    table = data.get(section, {})
    if not isinstance(table, dict):
        raise AccessFileError(f"{source}: [{section}] must be a table of name = \"level\"")
    levels = {}
    for key, value in table.items():
        try:
            levels[key] = Level.parse(value)
        except ValueError as exc:
            raise AccessFileError(f"{source}: [{section}] {key}: {exc}") from None
    return levels
