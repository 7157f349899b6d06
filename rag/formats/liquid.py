"""Liquid-style tags (Jekyll with kramdown, GitBook) and other template tokens: what the site shows.

* `{% raw %}...{% endraw %}`: the text between is shown as written (Liquid in examples), the tags
  never; `{% comment %}...{% endcomment %}` shows nothing;
* `{% highlight lang %}...{% endhighlight %}` is a fenced code block;
* `{% include name k="v" %}` is `_includes/name` (Jekyll) or the path as written (GitBook),
  with `{{ include.k }}` filled in, when the tree holds it, else nothing; none in a heading (a
  version badge is no part of the heading's text);
* `{% for %}...{% endfor %}` (and `tablerow`, `capture`) runs over data: left out whole; a page
  that is mostly such loops is skipped with a reason naming it (TemplatePage);
* GitBook blocks: `{% hint style="x" %}` is an admonition (`:::x`), `{% tab title="T" %}` a
  `**T:**` line, `{% code %}`, `{% content-ref %}`, `{% page-ref %}`, `{% embed %}` and their
  closing tags show their content only;
* `{{ site.key }}` is `_config.yml`'s value, `{{ 'text' | filter }}` the quoted text, `{% link x %}`
  the path, every other `{{ ... }}` (a Vue interpolation, `{{generator:...}}`) and `{% ... %}` nothing
  (but `{{ include.k }}`, kept for the including page to fill in);
* a reference link no definition resolves (`[#1037][]`, whose definitions a `{% for %}` wrote)
  shows its text;
* kramdown block attribute lines: `{: .note .info}` before a paragraph makes it an admonition,
  `{: #id}` after a heading is that heading's id, any other (`{:toc}`, `{: .class}`) is dropped;
  a `{#id}` anchor inside a paragraph or list item (GitHub-rendered handbooks) is dropped too.
Code (fenced blocks and code spans) is left as written, but for `{% raw %}` tags in it. None of
this is Markdown, so the dialect applies to every Markdown file.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import yaml

from rag.formats.dialect import Dialect, Include, outside_code
from rag.formats.model import TemplatePage

TEMPLATE_SHARE = 0.5  # a page whose loops are over half of it...
TEMPLATE_LEFT = 400  # ...and leave fewer characters (spaces not counted) is mostly template
_MASK = str.maketrans({"{": "\ue000", "}": "\ue001", "%": "\ue002"})
_UNMASK = str.maketrans({"\ue000": "{", "\ue001": "}", "\ue002": "%"})
_RAW = re.compile(r"\{%-?\s*raw\s*-?%\}(.*?)\{%-?\s*endraw\s*-?%\}", re.S)
_RAW_TAG = re.compile(r"\{%-?\s*(?:end)?raw\s*-?%\}")
_COMMENT = re.compile(r"\{%-?\s*comment\s*-?%\}.*?\{%-?\s*endcomment\s*-?%\}", re.S)
_LOOP = re.compile(r"\{%-?\s*(for|tablerow|capture)\b[^%]*%\}.*?\{%-?\s*end\1\s*-?%\}", re.S)
_HIGHLIGHT = re.compile(r"^[ \t]*\{%-?\s*highlight\s+([\w+#-]*)[^%]*%\}[ \t]*\n?|\n?[ \t]*\{%-?\s*endhighlight\s*-?%\}",
                        re.M)
_TAG = re.compile(r"\{%-?\s*([\w-]+)((?:[^%\"']|\"[^\"]*\"|'[^']*'|%(?!\}))*?)-?%\}")
_OUTPUT = re.compile(r"\{\{(?![<%])-?\s*((?:[^{}\"']|\"[^\"]*\"|'[^']*')*?)\s*-?\}\}")
_ARG = re.compile(r"""([\w-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|(\S+))""")
_QUOTED = re.compile(r"""^\s*(?:"([^"]*)"|'([^']*)')""")
_IAL = re.compile(r"^[ \t]*\{:[^{}\n]*\}[ \t]*$")
_INLINE_IAL = re.compile(r"\{:[^{}\n]*\}")
_INCLUDE = re.compile(r"\{%-?\s*include(?:_relative)?\b[^%]*%\}")
_IAL_ID = re.compile(r"#([\w:.-]+)")
_NOTE = re.compile(r"\.note\b(?:\s+\.(\w+))?")
_CODE_SPAN = re.compile(r"(`+)[^`].*?\1", re.S)
_UNRESOLVED = re.compile(r"\[([^\[\]\n]+)\]\[[\w .#-]*\](?![(\[])")  # `[#1037][]`, `[text][label]`
_INLINE_ID = re.compile(r"[ \t]*\{#[A-Za-z][\w:.-]*\}")  # `... week). {#google-doc}`
_WORDS = re.compile(r"[^\W_]")
_LINK_TARGET = re.compile(r"\]\([^()\s]*\)")
_HEADING = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]")
_SHOWN_TAGS = frozenset("code endcode content-ref endcontent-ref page-ref embed endembed tabs endtabs endtab".split())


def liquid(text: str, include: Include) -> str:
    if "{" not in text:
        return text
    text = _COMMENT.sub("", text)
    text = _RAW.sub(lambda m: m.group(1).translate(_MASK), text)
    text = _HIGHLIGHT.sub(lambda m: f"```{m.group(1)}\n" if m.group(1) is not None else "\n```", text)
    site = _Site(include)
    return outside_code(text, lambda run: _prose(run, include, site)).translate(_UNMASK)


class _Site:
    """`_config.yml` at the docs root, read at the first `{{ site.x }}`."""

    def __init__(self, include: Include) -> None:
        self._include = include
        self._config: dict[object, object] | None = None

    def value(self, key: str) -> str:
        if self._config is None:
            found = self._include("_config.yml", False)
            try:
                loaded = yaml.safe_load(found) if found else None
            except yaml.YAMLError:
                loaded = None
            self._config = loaded if isinstance(loaded, dict) else {}
        value = self._config.get(key)
        return str(value) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else ""


def _prose(run: str, include: Include, site: _Site) -> str:
    looped = _LOOP.sub("", run)
    _mostly_template(run, looped)
    lines = _attribute_lines(looped.split("\n"))
    run = "\n".join(_INCLUDE.sub("", line) if _HEADING.match(line) else line for line in lines)
    if "{" not in run:
        return run
    shown = _spans(run, lambda part: _INLINE_IAL.sub("", _tags(part, include, site)))
    before, after = run.split("\n"), shown.split("\n")
    if len(before) != len(after):
        return shown
    # a line that was only output tags and markup (`**{{ talk.topic }}** - [*{{ x }}*](url)`) shows nothing
    return "\n".join(line for line, was in zip(after, before)
                     if "{{" not in was or _WORDS.search(_LINK_TARGET.sub("", line)))


def _mostly_template(text: str, without_loops: str) -> None:
    """TemplatePage when loops make up most of the text and little is left around them."""
    def size(part: str) -> int:
        return len("".join(_OUTPUT.sub("", _TAG.sub("", part)).split()))

    left, whole = size(without_loops), len("".join(text.split()))
    if whole and left < TEMPLATE_LEFT and whole - len("".join(without_loops.split())) > whole * TEMPLATE_SHARE:
        share = round(100 * (1 - len("".join(without_loops.split())) / whole))
        raise TemplatePage(f"mostly template: a {{% for %}} loop over site data is {share}% of the page and "
                           f"{left} characters are left around it (the site builds it from data files)")


def _spans(text: str, edit: Callable[[str], str]) -> str:
    """`text` with `edit` applied outside its code spans."""
    pieces, at = [], 0
    for span in _CODE_SPAN.finditer(text):
        pieces += [edit(text[at:span.start()]), span.group(0)]
        at = span.end()
    return "".join(pieces) + edit(text[at:])


def _tags(text: str, include: Include, site: _Site) -> str:
    def tag(match: re.Match[str]) -> str:
        name, rest = match.group(1), match.group(2).strip()
        args = {m.group(1): next(g for g in m.groups()[1:] if g is not None) for m in _ARG.finditer(rest)}
        if name == "hint":
            return f"\n:::{args.get('style', 'info')}\n"
        if name == "endhint":
            return "\n:::\n"
        if name == "tab":
            return f"**{args.get('title', '')}:**\n" if args.get("title") else ""
        if name == "link":
            return rest.split()[0] if rest else ""
        if name in ("include", "include_relative"):
            return _included(rest, args, include, name == "include_relative")
        return ""

    def output(match: re.Match[str]) -> str:
        expression = match.group(1)
        if quoted := _QUOTED.match(expression):
            return quoted.group(1) if quoted.group(1) is not None else quoted.group(2)
        variable = expression.split("|")[0].strip()
        if variable.startswith("include."):
            return match.group(0)  # an include's parameter: filled in by the page that includes it
        return site.value(variable[5:]) if variable.startswith("site.") else ""

    return _OUTPUT.sub(output, _TAG.sub(tag, text))


def _included(rest: str, args: dict[str, str], include: Include, relative: bool) -> str:
    target = rest.split()[0].strip("\"'") if rest else ""
    if not target or "{" in target:
        return ""
    found = include(target, True) if relative or "/" in target else None
    if found is None and not relative:
        found = include(f"_includes/{target}", False)
    if found is None:
        return ""
    return re.sub(r"\{\{-?\s*include\.([\w-]+)\s*-?\}\}", lambda m: args.get(m.group(1), ""), found)


def _attribute_lines(lines: list[str]) -> list[str]:
    """kramdown's block attribute lines: a note's class makes the paragraph after it an
    admonition, an id after a heading is its id; every other one is dropped."""
    out: list[str] = []
    open_note = False
    for line in lines:
        if open_note and not line.strip():
            out.append(":::")
            open_note = False
        if not _IAL.match(line):
            out.append(line)
            continue
        previous = next((kept for kept in reversed(out) if kept.strip()), "")
        if (ident := _IAL_ID.search(line)) and _HEADING.match(previous) and not out[-1].strip() == "":
            out[-1] = f"{out[-1].rstrip()} {{#{ident.group(1)}}}"
        elif (note := _NOTE.search(line)) and not open_note:
            out.append(f":::{note.group(1) or 'note'}")
            open_note = True
    if open_note:
        out.append(":::")
    return out


def unresolved_references(text: str) -> str:
    """Prose whose references the parser could not resolve; a table row (`| ... |`, its links
    resolved after this filter) is left as it is."""
    if "][" not in text or text.startswith("|"):
        return text
    return _spans(text, lambda part: _UNRESOLVED.sub(r"\1", part))


def inline_ids(text: str) -> str:
    """Prose without the `{#id}` anchors written in a paragraph or list item (a heading's is its
    anchor, read before this): the rendered page shows none."""
    return _spans(text, lambda part: _INLINE_ID.sub("", part)) if "{#" in text else text


def raw_tags(info: str, code: str) -> str:
    """Code without `{% raw %}` tags (a Jekyll example wraps its Liquid in them inside the fence)."""
    return _RAW_TAG.sub("", code) if "raw" in code else code


LIQUID = Dialect(steps=(liquid,), code=(raw_tags,), prose=(unresolved_references, inline_ids))
