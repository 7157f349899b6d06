"""What the listeners read from a Slack payload, checked by type before any of them runs.

A signed payload can still be wrong (a bug on Slack's side, a replayed or hand-made request): a
mention without `channel`, a `ts` that is not a timestamp, a `text` that is a number, a reaction
whose `item` is a list, a form submitted without its `state`. Each would fail in the middle of a
listener, after the ack, as a traceback; here it is found first and named in one line. Optional
fields (`name?`) may be absent or null; a nested dict is an object with those fields.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")


@dataclass(frozen=True)
class Kind:
    what: str  # "is not {what}"
    test: Callable[[Any], bool]


TEXT = Kind("a string", lambda v: isinstance(v, str))
ID = Kind("a Slack id", lambda v: isinstance(v, str) and 0 < len(v) <= 255)
TS = Kind("a message timestamp", lambda v: isinstance(v, str) and _TS.fullmatch(v) is not None)
LINKS = Kind("a list of links", lambda v: isinstance(v, list) and all(
    isinstance(x, dict) and isinstance(x.get("url"), str) for x in v))
OBJECTS = Kind("an object of objects", lambda v: isinstance(v, dict) and all(isinstance(x, dict) for x in v.values()))
# A form's `state.values`: block id -> action id -> the input's state.
FORM_VALUES = Kind("an object of objects of objects", lambda v: OBJECTS.test(v) and all(map(OBJECTS.test, v.values())))

Fields = dict[str, Any]  # name -> Kind, or the Fields of an object

_MESSAGE: Fields = {"channel": ID, "ts": TS, "user?": TEXT, "text?": TEXT, "thread_ts?": TS, "subtype?": TEXT,
                    "channel_type?": TEXT, "bot_id?": TEXT, "team?": TEXT, "user_team?": TEXT}
_REACTION: Fields = {"user?": TEXT, "reaction?": TEXT, "item?": {"type?": TEXT, "channel?": TEXT, "ts?": TEXT}}
EVENTS: dict[str, Fields] = {
    "app_mention": _MESSAGE,
    "message": _MESSAGE,
    "reaction_added": _REACTION,
    "reaction_removed": _REACTION,
    "app_home_opened": {"user?": TEXT, "tab?": TEXT},
    "link_shared": {"channel": TEXT, "message_ts": TEXT, "links": LINKS, "source?": TEXT, "unfurl_id?": TEXT},
    "assistant_thread_started": {"assistant_thread?": {"user_id?": TEXT, "channel_id?": TEXT, "thread_ts?": TEXT}},
}
_USER: Fields = {"user": {"id": ID}}
INTERACTIONS: dict[str, Fields] = {
    "block_actions": _USER,
    "view_submission": _USER | {"view": {"callback_id": TEXT, "private_metadata?": TEXT,
                                          "state": {"values": FORM_VALUES}}},
    "message_action": _USER | {"callback_id": TEXT, "trigger_id": TEXT, "channel": {"id": ID},
                               "message": {"ts": TS, "user?": TEXT, "text?": TEXT, "thread_ts?": TS, "bot_id?": TEXT}},
}
COMMAND: Fields = {"command": TEXT, "text?": TEXT, "user_id": ID, "channel_id": ID, "team_id?": TEXT,
                   "trigger_id?": TEXT, "response_url?": TEXT}
_ACTION: Fields = {"action_id": TEXT, "value?": TEXT}


def problem(value: dict[str, Any], fields: Fields, where: str = "") -> str | None:
    """The first field of `value` that is missing or of the wrong type, in words; None if none."""
    for key, kind in fields.items():
        name = key.rstrip("?")
        item = value.get(name)
        if item is None:
            if not key.endswith("?"):
                return f"`{where}{name}` is missing"
            continue
        if not isinstance(kind, dict):
            found = None if kind.test(item) else f"`{where}{name}` is not {kind.what}"
        elif isinstance(item, dict):
            found = problem(item, kind, f"{where}{name}.")
        else:
            found = f"`{where}{name}` is not an object"
        if found:
            return found
    return None


def payload_problem(body: dict[str, Any]) -> tuple[str, str] | None:
    """(what the payload is, what is wrong with it) for a payload a listener could not read, else
    None. Kinds not listed here are not read beyond what Bolt itself checks (bot.app)."""
    if body.get("type") == "event_callback":
        event = body.get("event") or {}
        kind = _named(event.get("type"))
        found = problem(event, EVENTS.get(kind, {}))
        return (f"event {kind}", found) if found else None
    if "command" in body:
        found = problem(body, COMMAND)
        return ("command", found) if found else None
    kind = _named(body.get("type"))
    found = problem(body, INTERACTIONS.get(kind, {}))
    if found is None and kind == "block_actions":
        found = next((f for action in body.get("actions", []) if (f := problem(action, _ACTION, "actions[]."))), None)
    return (kind, found) if found else None


def _named(kind: object) -> str:
    """A payload's type as a log line may show it: short, printable (no forged log lines)."""
    text = str(kind)[:40]
    return text if text.isprintable() else "(unprintable type)"
