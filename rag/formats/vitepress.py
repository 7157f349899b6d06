"""VitePress: what its Markdown extensions show. Containers (`::: tip Title`, nested `::::`,
`::: code-group`) are the Docusaurus admonition rule's, `<script setup>` an HTML block shown as
nothing, `{{ ... }}` interpolations Liquid's output tags (rag/formats/liquid.py); here:

* `<<< ./file.yaml#region [label]` (or `<<< @/path`, `@` the docs root) is a code block with the
  file's text, only the named `#region` when one is given; nothing when the tree lacks the file;
* `// [!code ++]`, `// [!code focus]`, `// [!code highlight]` markers in code are dropped.
"""
from __future__ import annotations

import posixpath
import re

from rag.formats.dialect import Dialect, Include, outside_code

_IMPORT = re.compile(r"^([ \t]*)<<<[ \t]+(\S+?)(?:#([\w-]+))?(?:[ \t]*\{[^}\n]*\})?(?:[ \t]+\[[^\]\n]*\])?[ \t]*$",
                     re.M)
_REGION = r"^[^\n]*#region {name}\b[^\n]*\n(.*?)^[^\n]*#endregion\b"
_MARKER = re.compile(r"[ \t]*(?://|#|<!--|/\*)[ \t]*\[!code[^\]]*\][ \t]*(?:-->|\*/)?")


def snippets(text: str, include: Include) -> str:
    if "<<<" not in text:
        return text

    def snippet(match: re.Match[str]) -> str:
        indent, target, region = match.group(1), match.group(2), match.group(3)
        found = include(target[2:], False) if target.startswith("@/") else include(target, True)
        if found is None:
            return ""
        if region and (part := re.search(_REGION.format(name=re.escape(region)), found, re.M | re.S)):
            found = part.group(1)
        language = posixpath.splitext(target)[1].lstrip(".")
        fence = "```"
        while fence in found:
            fence += "`"
        return "\n".join(indent + line if line else line for line in
                         [f"{fence}{language}", *found.rstrip("\n").split("\n"), fence])

    return outside_code(text, lambda run: _IMPORT.sub(snippet, run))


def code_markers(info: str, code: str) -> str:
    return _MARKER.sub("", code) if "[!code" in code else code


VITEPRESS = Dialect(steps=(snippets,), code=(code_markers,))
