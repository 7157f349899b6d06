"""Keeping docsbot's record of its threads (state/threads.py) as Slack's events tell it: a
question it takes at the top level starts its thread's record; a later message in a recorded
thread (a person's, docsbot's own, another app's), an edit and a deletion there are recorded
as they arrive. A message in a thread docsbot takes no part in is recorded nowhere: the one
statement that would record it finds no thread.

A write that fails is one log line (never the message): the thread is then read with that
message missing, as when Slack never delivered it (every replica down)."""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from state.db import StateUnavailable
from state.threads import Posted, ThreadRecord

log = logging.getLogger(__name__)

# Messages kept in a thread's record: a person's (plain, sent to the channel too, with a file),
# another app's, a /me. Joins, topic changes and the like are not part of the conversation.
_KEPT_SUBTYPES = {None, "thread_broadcast", "file_share", "bot_message", "me_message"}
_EDITED, _DELETED = "message_changed", "message_deleted"


def in_a_thread(event: dict[str, Any]) -> bool:
    """Whether a `message` event may concern a recorded thread: a reply in a thread, or an edit
    or deletion (of any message: the record knows which it keeps)."""
    subtype = event.get("subtype")
    if subtype in (_EDITED, _DELETED):
        return True
    thread_ts = event.get("thread_ts")
    return subtype in _KEPT_SUBTYPES and isinstance(thread_ts, str) and thread_ts != event.get("ts")


async def took(record: ThreadRecord, event: dict[str, Any], bot_user_id: str | None) -> None:
    """A message docsbot takes as a question (a follow-up too, recorded as it came: now marked):
    at the top level it starts its thread's record; in a thread, it is recorded when that
    thread's record is kept. Its asker may follow up from now on, before the answer is posted."""
    thread_ts = event.get("thread_ts") or event["ts"]
    message = replace(Posted.of(event, bot_user_id), question=True)
    try:
        if thread_ts == event["ts"]:
            await record.start(event["channel"], thread_ts, [message])
        else:
            await record.note(event["channel"], thread_ts, message)
    except StateUnavailable as exc:
        log.warning("a question in %s was not recorded in its thread: %s", event["channel"], exc)


async def seen(record: ThreadRecord, event: dict[str, Any], bot_user_id: str | None) -> None:
    """An `in_a_thread` event: recorded when its thread's record is kept."""
    channel, subtype = event["channel"], event.get("subtype")
    try:
        if subtype == _DELETED:
            if isinstance(event.get("deleted_ts"), str):
                await record.deleted(channel, event["deleted_ts"])
        elif subtype == _EDITED:
            edited = event.get("message")
            if isinstance(edited, dict) and isinstance(edited.get("ts"), str) and isinstance(edited.get("text"), str):
                await record.edited(channel, edited["ts"], edited["text"])
        else:
            await record.note(channel, event["thread_ts"], Posted.of(event, bot_user_id))
    except StateUnavailable as exc:
        log.warning("a message in a thread of %s was not recorded: %s", channel, exc)
