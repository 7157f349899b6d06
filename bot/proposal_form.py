"""The "Suggest a docs change" form: what a message shortcut opens, and what its submission says.

The form is the draft: nothing leaves Slack before the person sends it. It holds the page and
section (the thread's answer's citation or near miss preselected), a title for a new page, and
the text (the message, quoted as written, when its words may be: see `may_prefill`). The
question is quoted in the pull request only from a public channel, or when the person who asked
it is the one proposing and ticks the box; otherwise it says "a question asked in Slack".
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from bot.blocks import escape, link

SHORTCUT = "suggest_docs_change"
FORM = "docs_change_form"
PAGE, SECTION, TITLE, TEXT, QUOTE = "page", "section", "new_title", "text", "quote"
TEXT_MAX_CHARS = 3000

PRIVATE_WORDS = ("Words from this conversation go into a pull request only with their author's consent: "
                 "write the answer in your own words.")
LIMITED = "You have proposed as many docs changes as a day allows; try again tomorrow."
NOT_READABLE = "Choose a page you can read, or give a new page a path and a title."


@dataclass(frozen=True)
class Origin:
    """Where the shortcut was used, carried by the form (its private_metadata)."""

    channel: str
    thread_ts: str
    public: bool  # a public channel: what was said there may be quoted
    answer_id: str = ""  # the thread's answer, whose question the pull request may quote


def may_prefill(origin_public: bool, proposer: str, author: str) -> bool:
    """A message's words go into the draft from a public channel, or when the proposer wrote them."""
    return origin_public or proposer == author


def form(origin: Origin, page: str, section: str, text: str, ask_consent: bool) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [
        _input(PAGE, "Page", page, hint="The page's path, as citations show it; a new path for a new page."),
        _input(SECTION, "Section", section, optional=True, hint="As citations show it (Deploying › Staging); "
                                                                  "empty: the page's opening text."),
        _input(TITLE, "Title of a new page", "", optional=True),
        _input(TEXT, "Text to add", text, multiline=True,
               hint="" if text or origin.public else PRIVATE_WORDS),
    ]
    if ask_consent:
        blocks.append({"type": "input", "block_id": QUOTE, "optional": True,
                       "label": {"type": "plain_text", "text": "Your question"},
                       "element": {"type": "checkboxes", "action_id": QUOTE, "options": [{
                           "text": {"type": "plain_text", "text": "Quote my question in the pull request"},
                           "value": "yes"}]}})
    return {"type": "modal", "callback_id": FORM, "private_metadata": json.dumps(origin.__dict__),
            "title": {"type": "plain_text", "text": "Suggest a docs change"},
            "submit": {"type": "plain_text", "text": "Propose"}, "close": {"type": "plain_text", "text": "Cancel"},
            "blocks": blocks}


def values(view: dict[str, Any]) -> dict[str, str]:
    """The form's inputs, stripped ("" where empty); QUOTE is "yes" when ticked."""
    state = view.get("state", {}).get("values", {})
    out = {}
    for key in (PAGE, SECTION, TITLE, TEXT):
        value = (state.get(key, {}).get(key) or {}).get("value")
        out[key] = value.strip() if isinstance(value, str) else ""
    ticked = (state.get(QUOTE, {}).get(QUOTE) or {}).get("selected_options") or []
    out[QUOTE] = "yes" if any(isinstance(o, dict) and o.get("value") == "yes" for o in ticked) else ""
    return out


def errors(given: dict[str, str]) -> dict[str, str]:
    found = {}
    if not given[PAGE] or given[PAGE].startswith("/") or ".." in given[PAGE].split("/"):
        found[PAGE] = "Name the page by its path in the docs (ops/deploy.md)."
    if not given[TEXT]:
        found[TEXT] = "Write the text to add."
    elif len(given[TEXT]) > TEXT_MAX_CHARS:
        found[TEXT] = f"Keep it under {TEXT_MAX_CHARS} characters."
    return found


def origin_of(view: dict[str, Any]) -> Origin | None:
    try:
        meta = json.loads(view.get("private_metadata") or "")
        return Origin(str(meta["channel"]), str(meta["thread_ts"]), bool(meta["public"]), str(meta["answer_id"]))
    except (json.JSONDecodeError, KeyError, TypeError):
        return None


def proposed(user: str, url: str, page: str) -> str:
    return f"<@{user}> proposed adding this to the docs: {link(url, 'the pull request')} on `{escape(page)}`."


def _input(key: str, label: str, initial: str, optional: bool = False, multiline: bool = False,
           hint: str = "") -> dict[str, Any]:
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": key, "multiline": multiline}
    if multiline:
        element["max_length"] = TEXT_MAX_CHARS
    if initial:
        element["initial_value"] = initial[:TEXT_MAX_CHARS]
    block: dict[str, Any] = {"type": "input", "block_id": key, "optional": optional,
                             "label": {"type": "plain_text", "text": label}, "element": element}
    if hint:
        block["hint"] = {"type": "plain_text", "text": hint}
    return block
