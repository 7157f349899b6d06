"""A channel's entry in the access file: its level, or a table that also says how answering works
there::

    [channels]
    C0ENG = "team"                        # the level answers here may use, alone
    [channels.C0SRE]
    level = "restricted"                  # optional, as above
    scope = ["runbooks/**", "sre/*.md"]   # documents searched first (globs as DOCSBOT_INCLUDE's)
    scope_mode = "prefer"                 # "prefer" (default): then everything the audience may
                                          # read, and the answer says so; "only": never leave it
    followups = false                     # follow-ups in threads need a mention (default: true)

The audience's level still applies inside a scope: a scope only ever narrows what is searched.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rag import Level, Scope

_KEYS = {"level", "scope", "scope_mode", "followups"}


@dataclass(frozen=True)
class ChannelRules:
    scope: Scope | None = None
    followups: bool = True  # a thread's follow-ups are answered without a mention (bot/followups.py)


NO_RULES = ChannelRules()


def parse_channels(table: Any, source: str) -> tuple[dict[str, Level], dict[str, ChannelRules]]:
    """The [channels] table: each channel's level (where it names one) and its rules (where it
    gives a table). ValueError names the file, the channel and what is wrong."""
    if not isinstance(table, dict):
        raise ValueError(f"{source}: [channels] must be a table of channel = \"level\" or [channels.ID] tables")
    levels: dict[str, Level] = {}
    rules: dict[str, ChannelRules] = {}
    for channel, value in table.items():
        entry = value if isinstance(value, dict) else {"level": value}
        unknown = set(entry) - _KEYS
        if unknown:
            raise ValueError(f"{source}: [channels] {channel}: unknown key(s) {sorted(unknown)} "
                             f"(expected {sorted(_KEYS)})")
        try:
            if "level" in entry:
                levels[channel] = Level.parse(entry["level"])
            if isinstance(value, dict):
                rules[channel] = _rules(entry)
        except ValueError as exc:
            raise ValueError(f"{source}: [channels] {channel}: {exc}") from None
    return levels, rules


def scope_text(rules: ChannelRules, documents: int | None) -> str:
    """What `/docs scope` says of a channel: its scope and mode, and how many indexed documents
    the scope holds (None: the index could not be read)."""
    scope = rules.scope
    if scope is None:
        text = "This channel has no scope: questions here search all the docs everyone here may read."
    else:
        held = "" if documents is None else f" ({documents} indexed document{'s' if documents != 1 else ''})"
        then = ("and never anything else" if scope.only
                else "then, when nothing there answers, all the docs everyone here may read (the answer says so)")
        text = f"Questions here search `{scope.named()}` first{held}, {then}."
    if not rules.followups:
        text += " Follow-ups in threads need a mention here."
    return text


def _rules(entry: dict[str, Any]) -> ChannelRules:
    followups = entry.get("followups", True)
    if not isinstance(followups, bool):
        raise ValueError(f"`followups` must be true or false, got {followups!r}")
    if "scope" not in entry:
        if "scope_mode" in entry:
            raise ValueError("`scope_mode` needs a `scope`")
        return ChannelRules(None, followups)
    return ChannelRules(Scope.parse(entry["scope"], entry.get("scope_mode", "prefer")), followups)
