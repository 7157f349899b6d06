"""Follow-ups in a channel thread without a mention: a later message in a thread where the bot
answered someone, from that person, that reads as a question to the bot, is answered there with
the thread as context.

What is never a follow-up: a message that mentions anyone (the bot's own mention is an
`app_mention`, answered as such; another person's, or @here, is addressed to them), one that
answers someone else in the thread (the message before it is neither the bot's nor the asker's),
an acknowledgement ("thanks!", "got it 👍"), a statement, a message from anyone the bot did not
answer (nor start answering) in that thread, one more than DOCSBOT_FOLLOWUP_HOURS after the bot's
last answer to that person there (or question of theirs it took), and any message in a channel
whose access-file entry says `followups = false`.

Such messages are dropped as they come: nothing is logged or counted for them (the checks read
the answer log), and nothing is stored beyond docsbot's record of its own threads
(bot/threads.py). Only the thread tells a follow-up from a reply to someone else, and it is read
(from that record: no Slack call for a thread docsbot answered in) only once the author is
within the per-person rate limit: so a likely follow-up (`may_follow_up`) claims its message in
the shared dedupe table (a retry or a second replica never answers it twice) and counts against
that limit first, and one the thread shows answers someone else is dropped then, with one log
line.
"""
from __future__ import annotations

import logging
import re
import time
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot.conversation import History, ThreadUnreadable, from_the_bot, history_of, thread_messages
from bot.services import Services
from state.db import StateUnavailable
from state.threads import ThreadRecord, asked_or_answered_in_thread

log = logging.getLogger(__name__)

CHANNEL_TYPES = ("channel", "group")  # message.channels, message.groups
_MENTION = re.compile(r"<[@!]")  # <@U…> a person or a bot, <!here>, <!channel>, <!subteam^S…>
_EMOJI = re.compile(r":[a-z0-9_+'-]+:", re.I)
_ACK = (r"thanks?(?: (?:a lot|so much|again|all))?|thank you(?: (?:so much|very much|again))?|thx|ty|tysm|cheers"
        r"|great|perfect|awesome|nice|cool|brilliant|amazing|super|excellent|ok(?:ay)?|kk?|got it|makes sense"
        r"|sounds good|that works|that helps|that helped|(?:very )?helpful|will do|yes|yep|yeah|no|nope|done|lol"
        r"|really|oh|ah|wow|i see|right")
_ONLY_ACKNOWLEDGEMENTS = re.compile(rf"(?:(?:{_ACK})[\s!.,?]*)+")
_ASKS = {"what", "how", "why", "where", "when", "who", "whom", "whose", "which", "can", "could", "is", "are",
         "am", "does", "do", "did", "should", "would", "will", "may", "might", "must", "was", "were", "has",
         "have", "any", "anything", "show", "explain", "tell", "list", "give", "describe", "find"}
_SHORT_FOLLOW_ON = re.compile(r"(?:and|also|what about|how about|same for|and for|plus)\b")
_SHORT_WORDS = 8


def reads_as_question(text: str) -> bool:
    """A question ("how do I ...", "... for staging?"), a request ("show me ...") or a short
    "and for X", but not an acknowledgement ("thanks!", "ok 👍", "really?") nor a statement."""
    plain = " ".join(re.sub(r"[^\w\s?'-]", " ", _EMOJI.sub(" ", text.lower())).split())
    if not plain.strip("? ") or _ONLY_ACKNOWLEDGEMENTS.fullmatch(plain):
        return False
    words = plain.replace("?", " ").split()
    return ("?" in plain or words[0] in _ASKS
            or bool(_SHORT_FOLLOW_ON.match(plain)) and len(words) <= _SHORT_WORDS)


def candidate(event: dict[str, Any]) -> bool:
    """Whether a `message` event could be a follow-up, from the event alone (no I/O): a person's
    new reply in a channel thread, mentioning nobody, that reads as a question."""
    text, thread_ts = event.get("text"), event.get("thread_ts")
    return (event.get("channel_type") in CHANNEL_TYPES and not event.get("subtype")
            and bool(event.get("user")) and not event.get("bot_id")
            and isinstance(thread_ts, str) and thread_ts != event.get("ts")
            and isinstance(text, str) and not _MENTION.search(text) and reads_as_question(text))


async def may_follow_up(services: Services, event: dict[str, Any]) -> bool:
    """Whether the `candidate` event may be a follow-up, before the thread is read: follow-ups
    are on in the channel and, within DOCSBOT_FOLLOWUP_HOURS, the bot answered its author in
    this thread or took a question of theirs there (the answer may still be being written, on
    this replica or another: a follow-up written meanwhile is one too)."""
    channel, user, thread_ts = event["channel"], event["user"], event["thread_ts"]
    hours = services.settings.followup_hours
    if hours <= 0 or not services.policy.rules(channel).followups:
        return False
    since_ms = int((time.time() - hours * 3600) * 1000)
    try:
        return await asked_or_answered_in_thread(services.answer_log.db, channel, thread_ts, user, since_ms)
    except StateUnavailable as exc:  # fail closed: a follow-up unanswered, never a stranger's message
        log.warning("a thread reply was not checked for a follow-up: %s", exc)
        return False


async def follow_up_history(
    client: AsyncWebClient, record: ThreadRecord, event: dict[str, Any], bot_user_id: str | None
) -> History | None:
    """The thread as context when the event that `may_follow_up` is one (the message before it is
    the bot's or the author's own), else None (it answers someone else). Read from docsbot's
    record of the thread, which it keeps for every thread it answered in (Slack only when not).
    ThreadUnreadable when neither could be read: whether it is a follow-up is then unknown."""
    channel, user, thread_ts, ts = event["channel"], event["user"], event["thread_ts"], event["ts"]
    messages = await thread_messages(client, record, channel, thread_ts, ts, bot_user_id)
    if messages is None:
        raise ThreadUnreadable(channel)
    earlier = [m for m in messages if float(m.get("ts", 0)) < float(ts)]
    if not earlier or not (from_the_bot(earlier[-1], bot_user_id) or earlier[-1].get("user") == user):
        return None
    return history_of(messages, ts, bot_user_id)
