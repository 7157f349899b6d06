"""The access file: who may read which level, which channels have a level, who the admins are.

A TOML file (path in `DOCSBOT_ACCESS_FILE`); every section is optional::

    admins = ["U012ABCDEF"]            # may run `/docs sync`

    [defaults]
    member = "public"                  # full workspace members matched by no rule below
    public_channel = "public"          # public channels not listed under [channels]

    [users]                            # by user ID; wins over groups, domains and the default
    U012ABCDEF = "restricted"
    U0CONTRACT = "public"              # an entry can also lower someone's level

    [groups]                           # Slack user group ID (needs usergroups:read)
    S0SRE = "restricted"

    [domains]                          # email domain (needs users:read.email)
    "example.com" = "team"

    [channels]                         # channel ID -> the level answers there may use
    C0ENG = "team"

Levels are public < team < restricted. A user with no [users] entry gets the highest level of
their groups and email domain, else `defaults.member`. Guests (single- and multi-channel) are
always public, whatever the file says. A listed private channel is still capped by the lowest
level among its members; a channel shared with another organisation is always public.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rag.levels import Level

_SECTIONS = {"admins", "defaults", "users", "groups", "domains", "channels"}
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

    def is_admin(self, user_id: str) -> bool:
        return user_id in self.admins

    def domain_level(self, email: str) -> Level | None:
        _, _, domain = email.rpartition("@")
        return self.domains.get(domain.lower()) if domain else None


def load_access(path: str | Path | None) -> AccessPolicy:
    """Read the access file; no path means everyone is a public reader with no admins."""
    if not path:
        return AccessPolicy()
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise AccessFileError(f"access file {path}: cannot read it ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise AccessFileError(f"access file {path}: not UTF-8 text (byte {exc.start})") from None
    except tomllib.TOMLDecodeError as exc:
        raise AccessFileError(f"access file {path}: not valid TOML ({exc})") from None
    return parse_access(data, f"access file {path}")


def parse_access(data: dict[str, Any], source: str = "access file") -> AccessPolicy:
    unknown = set(data) - _SECTIONS
    if unknown:
        raise AccessFileError(f"{source}: unknown section(s) {sorted(unknown)} (expected {sorted(_SECTIONS)})")
    admins = data.get("admins", [])
    if not isinstance(admins, list) or not all(isinstance(a, str) for a in admins):
        raise AccessFileError(f"{source}: `admins` must be a list of user IDs")
    defaults = _levels(data, "defaults", source)
    if set(defaults) - _DEFAULTS:
        raise AccessFileError(f"{source}: [defaults] accepts only {sorted(_DEFAULTS)}")
    return AccessPolicy(
        admins=frozenset(admins),
        member_default=defaults.get("member", Level.public),
        public_channel_default=defaults.get("public_channel", Level.public),
        users=_levels(data, "users", source),
        groups=_levels(data, "groups", source),
        domains={k.lower(): v for k, v in _levels(data, "domains", source).items()},
        channels=_levels(data, "channels", source),
    )


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
