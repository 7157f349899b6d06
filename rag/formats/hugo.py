"""Hugo: shortcodes `{{< name args >}}` and `{{% name args %}}` (and their closing tags) are dropped
and the text between them kept; `{{< highlight go >}}` ... `{{< /highlight >}}` is a code block. A
TOML front matter (`+++` lines) is dropped: its fields are Hugo's, not the docs'. Neither occurs in
plain Markdown outside code, so the dialect applies to every `.md`."""
from __future__ import annotations

import re

from rag.formats.dialect import Dialect, Include, outside_code

_SHORTCODE = re.compile(r"\{\{([<%])\s*(/?)\s*([\w./-]+)((?:\"[^\"{}]*\"|[^\"{}])*?)[>%]\}\}")
_TOML_FRONT_MATTER = re.compile(r"\A\+\+\+[ \t]*\n.*?^\+\+\+[ \t]*$\n?", re.S | re.M)


def _shortcode(match: re.Match[str]) -> str:
    closing, name, args = match.group(2), match.group(3), match.group(4).split()
    if name == "highlight":
        return "```" if closing else "```" + (args[0].strip("\"'") if args else "")
    return ""


def shortcodes(text: str, include: Include) -> str:
    text = _TOML_FRONT_MATTER.sub("", text, count=1)
    return outside_code(text, lambda run: _SHORTCODE.sub(_shortcode, run))


HUGO = Dialect(steps=(shortcodes,))
