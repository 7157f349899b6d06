"""Each generator's slug of a heading, where it differs from GitHub's (rag/formats/anchors.py):

- vitepress (@mdit-vue's slugify): accents dropped, every run of spaces and punctuation one `-`,
  none at the ends, lower case, a leading digit prefixed `_` (`server.watch` -> `server-watch`);
- jekyll (kramdown's auto ids): leading characters up to the first letter dropped, then every
  character but ASCII letters, digits, spaces and `-`, spaces to `-`, lower case;
- middleman (Redcarpet's `with_toc_data`): lower case, each run of its stripped characters
  (space and ASCII punctuation) one `-`, none at the ends; other characters kept.
"""
from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

_VITEPRESS_SPECIAL = re.compile(r"""[\s~`!@#$%^&*()\-_+=\[\]{}|\\;:"'“”‘’<>,.?/]+""")
_REDCARPET_STRIPPED = re.compile(r"""[ \-&+$,/:;=?@"#{}|^~\[\]`\\*()%.!']+""")


def vitepress(heading: str) -> str:
    text = "".join(c for c in unicodedata.normalize("NFKD", heading) if not unicodedata.combining(c))
    text = re.sub(r"[\x00-\x1f]", "", text)
    text = _VITEPRESS_SPECIAL.sub("-", text).strip("-")
    return re.sub(r"^(\d)", r"_\1", text).lower()


def kramdown(heading: str) -> str:
    text = re.sub(r"^[^a-zA-Z]+", "", heading)
    text = re.sub(r"[^a-zA-Z0-9 -]", "", text)
    return text.replace(" ", "-").lower()


def redcarpet(heading: str) -> str:
    return _REDCARPET_STRIPPED.sub("-", heading.lower()).strip("-")


SLUGS: dict[str, Callable[[str], str]] = {"vitepress": vitepress, "jekyll": kramdown, "middleman": redcarpet}
