"""Slack messages for answers: Block Kit within Slack's limits, with nothing the model can abuse.

Model output and document titles are escaped (`&`, `<`, `>`), so an answer can never ping
`@channel`, mention a user or carry a link, and their text objects are `verbatim`, so Slack does
not turn a bare URL, `#channel` or `@here` into a link or a ping either; the only links are the
citations' own URLs (explicit `<url|label>` links still render in verbatim text).
"""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from rag import Answer, Citation
from rag.paths import source_of
from rag.site_links import AnswerLinks, Pages
from rag.slack_text import LinkResolver, escape, to_mrkdwn
from sync.report import short_commit

SECTION_LIMIT = 3000  # characters of text in one section block
ANSWER_LIMIT = 9000  # the answer is cut here (3 sections), so a message stays far below ~12k
FALLBACK_LIMIT = 3000  # `text` of chat.update must stay under 4,000
# What docsbot adds to a message of its own (a slow answer's plan) stays within: its blocks as JSON
# plus its `text`. Slack's undocumented limit (`msg_blocks_too_long`) was measured at ~13,200
# characters (slackapi/bolt-js#2509); the stand-in enforces 13,000.
MESSAGE_CHARS = 12_000
MAX_CITATIONS = 10
QUESTION_LIMIT = 2000  # characters of a question (the form's own limit); a longer one is refused

FEEDBACK_UP = "feedback_up"
FEEDBACK_DOWN = "feedback_down"
FEEDBACK_NATIVE = "feedback_native"  # Slack's feedback_buttons; the value is "up:<answer id>" or "down:…"
ANSWER_IN_DM = "answer_in_dm"
ASK_AGAIN = "ask_again"  # on the note that ends a placeholder left by a stopped process; the value is its answer id

ASK_FORM = "docs_ask"
QUESTION_INPUT = "question"

THINKING = "Looking through the docs…"
WORKING = "Working on it…"  # the text of a slow answer's placeholder showing its plan (bot/plan.py)
SOURCES = "*Sources*"
# Under a not-sure reply (Answer.confidence): the passage is the closest the docs hold, not a sure answer.
NOT_SURE_CONTEXT = ("⚠️ Not a sure answer: this is the closest passage in the docs, quoted as written. "
                    "A 👎 tells the docs' owners it is missing.")
# Under an answer the embedded answerer quoted because the model's could not be used (Answer.fallback).
QUOTED_CONTEXT = "Quoted from the docs: the AI's answer could not be used this time."
IN_LINE = "You're in line: {ahead} ahead of you. I'll answer as soon as it's your turn."

Block = dict[str, Any]


def mrkdwn(text: str, links: LinkResolver | None = None) -> str:
    """Escaped answer text as Slack shows it: the one renderer of every answer path
    (rag/slack_text.py: bold, links, tables, callouts, fences; no raw markup), the docs' relative
    links resolved by `links` (rag/site_links.py)."""
    return to_mrkdwn(text, links)


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


def escape_within(text: str, limit: int) -> str:
    """`text` escaped and cut to `limit` characters, never inside an entity (`&amp;`): escaping
    can make a text five times longer."""
    escaped = escape(text)
    if len(escaped) <= limit:
        return escaped
    return re.sub(r"&[a-z]*$", "", escaped[: limit - 1]).rstrip() + "…"


def truncate(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def section(text: str, verbatim: bool = False) -> Block:
    """`verbatim` for text from the model or the docs: nothing in it is auto-linked."""
    text_object: Block = {"type": "mrkdwn", "text": text}
    if verbatim:
        text_object["verbatim"] = True
    return {"type": "section", "text": text_object}


def in_line(ahead: int) -> str:
    """The placeholder of a question waiting for an answer slot."""
    if ahead == 0:
        return IN_LINE.format(ahead="you're next, nobody is")
    return IN_LINE.format(ahead=f"{ahead} question{'s' if ahead != 1 else ''}")


def is_placeholder(text: str) -> bool:
    """A placeholder of ours (thinking, a plan, or a place in line): not part of a thread's history."""
    return text in (THINKING, WORKING) or text.startswith(IN_LINE[:14])


def button(label: str, action_id: str, value: str, style: str | None = None) -> Block:
    element: Block = {"type": "button", "text": {"type": "plain_text", "text": label, "emoji": True},
                      "action_id": action_id, "value": value}
    if style:
        element["style"] = style
    return element


def link(url: str, label: str) -> str:
    """A Slack link to `url` labelled `label` (escaped already); anything but a web URL is its label."""
    if not url.startswith(("https://", "http://")):
        return label
    safe = quote(url, safe=":/?#[]@!$&'()*+,;=%~")  # spaces, controls, <, > and | percent-encoded
    return f"<{safe}|{label}>"


def _where(c: Citation) -> str:
    """The section's name, linked to its page on the docs site, else to the commit permalink."""
    return link(c.page_url or c.url, escape(f"{c.title} › {c.section}" if c.section else c.title))


def citation_line(c: Citation) -> str:
    """`[n] <permalink|Title › Section> · v2.3 · a1b2c3d · 2026-10-01`; with a docs site the title
    links to the rendered page and the commit to its permalink:
    `[n] <page|Title › Section> · v2.3 · <permalink|commit a1b2c3d> · 2026-10-01`. With several
    sources the source's name follows the title: `[n] <…|Title> · handbook · …`. A warning
    (deprecated, overdue for review) follows the title: `[n] <…|Title> · ⚠ deprecated · …`."""
    bits = [f"[{c.n}] {_where(c)}"]
    if source := source_of(c.doc_path)[0]:  # several sources: which one the page is in
        bits.append(escape(source))
    if c.warning:
        bits.append(escape(c.warning))
    if c.version:
        bits.append(f"v{escape(c.version)}")
    if c.commit and c.page_url and c.url.startswith(("https://", "http://")):
        bits.append(link(c.url, f"commit {escape(short_commit(c.commit))}"))
    elif c.commit:
        bits.append(f"`{escape(short_commit(c.commit))}`")
    if c.commit_date:
        bits.append(escape(c.commit_date[:10]))
    return " · ".join(bits)


def abstention_text(answer: Answer) -> str:
    """Why there is no answer, in plain words, with when to try again if the index is not ready
    (an AI service that is down is no abstention: the docs are quoted instead, rag/engine.py)."""
    text = answer.answer
    if answer.abstain_reason == "index_unavailable":
        text += " Please try again in a few minutes."
    return text


def feedback(answer_id: str) -> Block:
    return {"type": "actions", "block_id": "feedback", "elements": [
        button("👍 Helpful", FEEDBACK_UP, answer_id),
        button("👎 Not helpful", FEEDBACK_DOWN, answer_id),
    ]}


def native_feedback_buttons(answer_id: str) -> Block:
    """Slack's own 👍/👎 (a `feedback_buttons` element in a `context_actions` block)."""
    def choice(emoji: str, label: str, vote: str) -> Block:
        return {"text": {"type": "plain_text", "text": emoji}, "accessibility_label": label,
                "value": f"{vote}:{answer_id}"}

    return {"type": "context_actions", "block_id": "feedback", "elements": [{
        "type": "feedback_buttons", "action_id": FEEDBACK_NATIVE,
        "positive_button": choice("👍", "This answer was helpful", "up"),
        "negative_button": choice("👎", "This answer was not helpful", "down"),
    }]}


def answer_message(
    answer: Answer, answer_id: str, native_feedback: bool = False, pages: Pages | None = None,
) -> dict[str, Any]:
    """`text` (notification fallback) and `blocks` for chat.postMessage / chat.update: the text
    sections, then what follows it (sources, feedback controls: Slack's own buttons when
    `native_feedback`)."""
    body = answer_body(answer, pages)
    blocks = [section(piece, verbatim=True) for piece in split_text(body)]
    if answer.citations:  # an answer's sources, or the page of a not-sure passage
        lines = [citation_line(c) for c in answer.citations[:MAX_CITATIONS]]
        blocks.extend(section(piece, verbatim=True) for piece in split_text(SOURCES + "\n" + "\n".join(lines)))
    notes = [NOT_SURE_CONTEXT] if answer.confidence == "not_sure" else []
    if answer.fallback:
        notes.append(QUOTED_CONTEXT)
    blocks.extend({"type": "context", "elements": [{"type": "mrkdwn", "text": note}]} for note in notes)
    if answer.scope_note:  # a channel's scope (rag/scope.py): the answer came from outside it, or there was none
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": escape(answer.scope_note)}]})
    blocks.append(native_feedback_buttons(answer_id) if native_feedback else feedback(answer_id))
    return {"text": truncate(body, FALLBACK_LIMIT), "blocks": blocks}


def answer_body(answer: Answer, pages: Pages | None = None) -> str:
    """The answer's text as Slack mrkdwn (escaped), its links resolved against its citations and
    the site's URL rules (`pages`), or why there is none."""
    if answer.answered or answer.confidence == "not_sure":
        return mrkdwn(truncate(answer.answer, ANSWER_LIMIT), AnswerLinks(answer.citations, pages))
    if answer.near_miss:
        near = answer.near_miss
        warned = f" ({escape(near.warning)})" if near.warning else ""
        return f"{escape(abstention_text(answer))} The closest I found: {_where(near)}{warned}"
    return escape(abstention_text(answer))


def answered_for(message: dict[str, Any], channel: str) -> dict[str, Any]:
    """An answer in docsbot's agent view given for the channel its asker looks at: a context line
    (above its feedback controls) says so."""
    note = {"type": "context", "elements": [{"type": "mrkdwn", "text": (
        f"Answered for <#{channel}>, the channel you're looking at: from its docs, at what its readers may read.")}]}
    return {**message, "blocks": [*message["blocks"][:-1], note, message["blocks"][-1]]}


def after_text(message: dict[str, Any]) -> list[Block]:
    """The blocks of an answer message besides its text (its plan, sources, feedback): what a
    streamed answer gets when it stops."""
    plan = [b for b in message["blocks"] if b["type"] == "plan"]
    blocks = [b for b in message["blocks"] if b["type"] != "plan"]
    first = next((i for i, b in enumerate(blocks) if b["type"] != "section" or b["text"]["text"].startswith(SOURCES)),
                 len(blocks))
    return plan + blocks[first:]


def notice(text: str, echoes_user: bool = False) -> dict[str, Any]:
    """A plain message from the bot (help, busy, errors); `text` is ours, not the model's.
    `echoes_user`: it quotes what someone typed (escaped by the caller), so its blocks are
    verbatim: a quoted "@here" or "#general" stays text instead of notifying the channel."""
    return {"text": text, "blocks": [section(piece, verbatim=echoes_user) for piece in split_text(text)]}


def home_view(level: str, examples: list[str], usage: str, status: str, pending_reviews: int | None) -> dict[str, Any]:
    """The App Home tab; `pending_reviews` (👎 answers waiting) only for admins."""
    parts = [section(f"*What I can do for you*\nYou read the docs at level *{level}*: in a direct message or my "
                     "assistant panel I answer from everything at that level; in a channel, only from what everyone "
                     "there may read.")]
    if examples:
        parts.append(section("*Try asking*\n" + "\n".join(f"• {escape(q)}" for q in examples), verbatim=True))
    parts.append(section(usage))
    parts.append(section(status))
    if pending_reviews is not None:
        parts.append(section(f"*Feedback*\n{pending_reviews} 👎 answer{'s' if pending_reviews != 1 else ''} "
                             "waiting for review: `/docs feedback` lists them."))
    return {"type": "home", "blocks": parts}


def dm_offer(answer_id: str, reason: str) -> dict[str, Any]:
    """The private note to an asker who could see more than this conversation allows."""
    text = (f"{reason} So I only used documents everyone here may see. "
            "Want me to answer you in a direct message instead, at your own access level?")
    return {"text": text, "blocks": [
        section(text),
        {"type": "actions", "block_id": "dm_offer",
         "elements": [button("Answer me in a DM", ANSWER_IN_DM, answer_id, style="primary")]},
    ]}


def orphaned(text: str, answer_id: str) -> dict[str, Any]:
    """A placeholder whose process stopped before answering: `text` and a button to ask again."""
    return {"text": text, "blocks": [
        section(text),
        {"type": "actions", "block_id": "ask_again", "elements": [button("Ask again", ASK_AGAIN, answer_id)]},
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
                        "max_length": QUESTION_LIMIT},
        }],
    }
