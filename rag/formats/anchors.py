"""Heading anchors: GitHub's slug, its `-1`, `-2` dedupe, and explicit ids written after a heading.

An explicit id is the rendered page's anchor, so it wins over the slug and is never shown:
`## Title {#id}` (Docusaurus, kramdown, Pandoc), `## Title { #id .class }` (MkDocs `attr_list`),
`## Title [#id]`. A trailing `{...}` that is not an attribute list (`## The {x} option` has no
`#`/`.`/`key=value` parts) is ordinary heading text.
"""
from __future__ import annotations

import re

_ATTR = r"""(?:[#.][\w:.-]+|[\w-]+=(?:"[^"]*"|'[^']*'|[^\s"'{}]+))"""  # #id, .class, key=value
_ATTR_LIST = re.compile(rf"\{{:?[ \t]*({_ATTR}(?:[ \t]+{_ATTR})*)[ \t]*\}}[ \t]*$")
_BRACKET_ID = re.compile(r"\[#([\w:.-]+)\][ \t]*$")


def slugify(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_~\[\]()]", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def explicit_id(heading: str) -> tuple[str, str]:
    """(heading without its trailing id syntax, the id or "")."""
    if match := _BRACKET_ID.search(heading):
        return heading[: match.start()].rstrip(), match.group(1)
    if match := _ATTR_LIST.search(heading):
        ids = [part[1:] for part in match.group(1).split() if part.startswith("#")]
        return heading[: match.start()].rstrip(), ids[-1] if ids else ""
    return heading, ""


class Anchors:
    """Hands out a page's anchors in document order: a slug seen before gets `-1`, `-2`, ... like
    GitHub; the preamble holds "", so a heading with no slug gets "-1"."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {"": 1}

    def anchor(self, heading: str, explicit: str = "") -> str:
        if explicit:
            self._seen[explicit] = self._seen.get(explicit, 0) + 1
            return explicit
        base = slugify(heading)
        count = self._seen.get(base, 0)
        self._seen[base] = count + 1
        return base if count == 0 else f"{base}-{count}"
