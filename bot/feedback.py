"""Feedback on answers in Slack: the "what was wrong?" form, the note a 👎 reaction gets, and
which reactions are votes. Votes themselves live in the answer log (`state.answers`)."""
from __future__ import annotations

import json
from typing import Any

from bot.blocks import button, escape, notice, section, truncate
from state.answers import Vote

FEEDBACK_FORM = "feedback_form"
FEEDBACK_EXPLAIN = "feedback_explain"  # the button under the note a 👎 reaction gets
REASON_INPUT = "reason"
EXPECTED_INPUT = "expected"
EXPECTED_MAX_CHARS = 1000
SUMMARY_MAX_CHARS = 2800  # one section, inside a code block

REASON_LABELS = {
    "wrong": "The answer is wrong",
    "outdated": "It is out of date",
    "missing": "It misses something / no answer",
    "not_allowed": "I'm not allowed to see this",
    "other": "Something else",
}
# Reaction names as events carry them, without a skin tone suffix (`-1::skin-tone-3`).
REACTION_VOTES: dict[str, Vote] = {"-1": "down", "thumbsdown": "down", "+1": "up", "thumbsup": "up"}

THANKS = "Thanks for the feedback!"
EXPIRED = "Sorry, I no longer have a record of that answer, so I couldn't save your feedback."
RETRY = "Sorry, I couldn't record that, please try again."  # the state database is unreachable
ASK_WHY = "Thanks for the 👎. Tell me what was wrong, so the docs or I can get better?"


def reaction_vote(reaction: str) -> Vote | None:
    return REACTION_VOTES.get(reaction.split("::", 1)[0])


def form(answer_id: str, channel: str, thread_ts: str | None) -> dict[str, Any]:
    """The modal a 👎 opens; where to thank the person afterwards rides in private_metadata."""
    options = [{"text": {"type": "plain_text", "text": label}, "value": value}
               for value, label in REASON_LABELS.items()]
    return {
        "type": "modal",
        "callback_id": FEEDBACK_FORM,
        "private_metadata": json.dumps({"answer_id": answer_id, "channel": channel, "thread_ts": thread_ts}),
        "title": {"type": "plain_text", "text": "What was wrong?"},
        "submit": {"type": "plain_text", "text": "Send"},
        "close": {"type": "plain_text", "text": "Skip"},
        "blocks": [
            {"type": "input", "block_id": REASON_INPUT, "label": {"type": "plain_text", "text": "The answer…"},
             "element": {"type": "radio_buttons", "action_id": REASON_INPUT, "options": options}},
            {"type": "input", "block_id": EXPECTED_INPUT, "optional": True,
             "label": {"type": "plain_text", "text": "What did you expect? (an answer, or the doc that has it)"},
             "element": {"type": "plain_text_input", "action_id": EXPECTED_INPUT, "multiline": True,
                         "max_length": EXPECTED_MAX_CHARS}},
        ],
    }


def form_values(view: dict[str, Any]) -> tuple[str | None, str | None]:
    """(reason, expected) from a submitted form; None where missing or not one of ours."""
    values = view.get("state", {}).get("values", {})
    selected = (values.get(REASON_INPUT, {}).get(REASON_INPUT) or {}).get("selected_option") or {}
    reason = selected.get("value")
    expected = (values.get(EXPECTED_INPUT, {}).get(EXPECTED_INPUT) or {}).get("value")
    return (reason if reason in REASON_LABELS else None), (expected or "")[:EXPECTED_MAX_CHARS].strip() or None


def form_metadata(view: dict[str, Any]) -> dict[str, Any] | None:
    try:
        meta = json.loads(view.get("private_metadata") or "")
    except json.JSONDecodeError:
        return None
    return meta if isinstance(meta, dict) and isinstance(meta.get("answer_id"), str) else None


def ask_why(answer_id: str) -> dict[str, Any]:
    """The private note under an answer someone reacted 👎 to, with a button to the form."""
    return {"text": ASK_WHY, "blocks": [
        section(ASK_WHY),
        {"type": "actions", "block_id": "feedback_explain",
         "elements": [button("Tell us what was wrong", FEEDBACK_EXPLAIN, answer_id)]},
    ]}


def summary(text: str) -> dict[str, Any]:
    """The candidates summary of `/docs feedback` (user text escaped, in a code block)."""
    body = truncate(escape(text), SUMMARY_MAX_CHARS)
    return notice(f"*Thumbs-down answers to review* (full list: `python -m eval candidates`)\n```{body}```",
                  echoes_user=True)
