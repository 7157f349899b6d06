"""Slack messages for answers: Block Kit within Slack's limits, with nothing the model can abuse.

Model output and document titles are escaped (`&`, `<`, `>`), so an answer can never ping
`@channel`, mention a user or carry a link; the only links are the citations' own URLs.
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from rag.answer import Answer, Citation

SECTION_LIMIT = 3000  # characters of text in one section block
ANSWER_LIMIT = 9000  # the answer is cut here (3 sections), so a message stays far below ~12k
FALLBACK_LIMIT = 3000  # `text` of chat.update must stay under 4,000
MAX_CITATIONS = 10

FEEDBACK_UP = "feedback_up"
FEEDBACK_DOWN = "feedback_down"
ANSWER_IN_DM = "answer_in_dm"

ASK_FORM = "docs_ask"
QUESTION_INPUT = "question"

THINKING = "Looking through the docs…"

Block = dict[str, Any]


def escape(text: str) -> str:
    """Slack's three control characters; this also defuses <!channel>, <@U…> and <url|…>."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def mrkdwn(text: str) -> str:
    """Escaped model output, with Markdown **bold** turned into Slack's *bold*."""
    return re.sub(r"\*\*(\S(?:.*?\S)?)\*\*", r"*\1*", escape(text))


def split_text(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    """Pieces of at most `limit` characters, cut at a paragraph, line or space when possible."""
    pieces = []
    while len(text) > limit:
        cut = max(text.rfind(sep, 0, limit) for sep in ("\n\n", "\n", " "))
        cut = cut if cut > limit // 2 else limit
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text:
        pieces.append(text)
    return pieces


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def button(label: str, action_id: str, value: str, style: str | None = None) -> Block:
    element: Block = {"type": "button", "text": {"type": "plain_text", "text": label, "emoji": True},
                      "action_id": action_id, "value": value}
    if style:
        element["style"] = style
    return element


def _link(url: str, label: str) -> str:
    if not url.startswith(("https://", "http://")):
        return label
    safe = quote(url, safe=":/?#[]@!$&'()*+,;=%~")  # spaces, controls, <, > and | percent-encoded
    return f"<{safe}|{label}>"


def citation_line(c: Citation) -> str:
    """`[n] <permalink|Title › Section> · v2.3 · a1b2c3d · 2026-10-01`"""
    label = escape(f"{c.title} › {c.section}" if c.section else c.title)
    bits = [f"[{c.n}] {_link(c.url, label)}"]
    if c.version:
        bits.append(f"v{escape(c.version)}")
    if c.commit:
        bits.append(f"`{escape(c.commit[:7])}`")
    if c.commit_date:
        bits.append(escape(c.commit_date[:10]))
    return " · ".join(bits)


def abstention_text(answer: Answer) -> str:
    """Why there is no answer, in plain words, with when to try again if the AI service is down."""
    text = answer.answer
    if answer.abstain_reason == "provider_error":
        wait = answer.retry_after
        text += f" Please try again in about {_duration(wait)}." if wait else " Please try again in a few minutes."
    elif answer.abstain_reason == "index_unavailable":
        text += " Please try again in a few minutes."
    return text


def _duration(seconds: float) -> str:
    seconds = max(1, round(seconds))
    if seconds < 90:
        return f"{seconds} seconds"
    return f"{round(seconds / 60)} minutes"


def feedback(answer_id: str) -> Block:
    return {"type": "actions", "block_id": "feedback", "elements": [
        button("👍 Helpful", FEEDBACK_UP, answer_id),
        button("👎 Not helpful", FEEDBACK_DOWN, answer_id),
    ]}


def answer_message(answer: Answer, answer_id: str) -> dict[str, Any]:
    """`text` (notification fallback) and `blocks` for chat.postMessage / chat.update."""
    if answer.answered:
        body = mrkdwn(truncate(answer.answer, ANSWER_LIMIT))
        sources = [citation_line(c) for c in answer.citations[:MAX_CITATIONS]]
    else:
        body = escape(abstention_text(answer))
        sources = []
    blocks = [section(piece) for piece in split_text(body)]
    if sources:
        blocks.extend(section(piece) for piece in split_text("*Sources*\n" + "\n".join(sources)))
    blocks.append(feedback(answer_id))
    return {"text": truncate(body, FALLBACK_LIMIT), "blocks": blocks}


def notice(text: str) -> dict[str, Any]:
    """A plain message from the bot (help, busy, errors); `text` is ours, not the model's."""
    return {"text": text, "blocks": [section(piece) for piece in split_text(text)]}


def dm_offer(answer_id: str, reason: str) -> dict[str, Any]:
    """The private note to an asker who could see more than this conversation allows."""
    text = (f"{reason} So I only used documents everyone here may see. "
            "Want me to answer you in a direct message instead, at your own access level?")
    return {"text": text, "blocks": [
        section(text),
        {"type": "actions", "block_id": "dm_offer",
         "elements": [button("Answer me in a DM", ANSWER_IN_DM, answer_id, style="primary")]},
    ]}


def ask_form(channel: str) -> dict[str, Any]:
    """The modal `/docs` opens when typed without a question; the channel rides along."""
    return {
        "type": "modal",
        "callback_id": ASK_FORM,
        "private_metadata": channel,
        "title": {"type": "plain_text", "text": "Ask the docs"},
        "submit": {"type": "plain_text", "text": "Ask"},
        "close": {"type": "plain_text", "text": "Cancel"},
        "blocks": [{
            "type": "input",
            "block_id": QUESTION_INPUT,
            "label": {"type": "plain_text", "text": "Your question"},
            "element": {"type": "plain_text_input", "action_id": QUESTION_INPUT, "multiline": True,
                        "max_length": 2000},
        }],
    }
