"""The one renderer from the document model's normalised Markdown (rag/formats/model.py) to Slack
mrkdwn: every answer path's text goes through `to_mrkdwn` (bot/blocks.py calls it), so no raw
markup of any dialect reaches Slack.

* Slack's control characters are escaped first (`&`, `<`, `>`): nothing can ping or link;
* `**bold**` and `__bold__` are Slack's `*bold*`;
* a link with an absolute URL is `text (url)`; a relative one (`/guide/x.html`, `x.md`) or an
  in-page anchor (`#setup`) is a Slack link `<url|text>` to where the caller's `links` resolve it
  (rag/site_links.py: the published page, else the file at the commit), given the number of the
  citation `[n]` that follows it (the passage it was quoted from); unresolved, its text only;
* a table is one `Header: value; Header: value` line per row, or a code block when it is wider
  than WIDE_TABLE columns;
* a callout (`**Note:** text`, a GitHub `> [!NOTE]` alert) is a quoted line with its label;
* an explicit heading id (`{#id}`) and a code fence's language word are dropped;
code (fenced blocks, code spans) is shown as written, escaped only.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from urllib.parse import quote

# (a relative link's target, the citation number of its passage or None) -> its URL, or "".
LinkResolver = Callable[[str, "int | None"], str]

WIDE_TABLE = 4  # columns: a wider table stays a code block (its lines would not read as sentences)

_FENCE = re.compile(r"^([ \t]*)(`{3,}|~{3,})[^\n]*\n.*?^\1?[ \t]*\2[ \t]*$", re.M | re.S)
_FENCE_LANGUAGE = re.compile(r"^([ \t]*(?:`{3,}|~{3,}))[ \t]*[\w+#.-]+[ \t]*$", re.M)
_CODE_SPAN = re.compile(r"(`+)[^`\n].*?\1")
_URL = r"(?:[^()\s]|\([^()\s]*\))+"  # one level of parentheses: `wiki/Yum_(software)`
# A link whose text may hold code spans (`[`build.manifest` API](/guide/x)`), or a code span.
_LINK_OR_CODE = re.compile(rf"\[(?:[^\[\]\n`]|`[^`\n]+`)+\]\({_URL}\)|(`+)[^`\n].*?\1")
_LINK = re.compile(rf"\[([^\[\]\n]+)\]\(({_URL})\)")
_BOLD = re.compile(r"(\*\*|__)(\S(?:.*?\S)?)\1")
_ALERT = re.compile(r"^&gt;[ \t]*\[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\][ \t]*$", re.M | re.I)
_LABELS = "Note|Tip|Info|Important|Warning|Caution|Danger|Success|Hint|Details"
_CALLOUT = re.compile(rf"^\*\*((?:{_LABELS})\b[^*\n]*?:?)\*\*[ \t]*", re.M | re.I)
_EXPLICIT_ID = re.compile(r"[ \t]*\{#[\w:.-]+\}[ \t]*$", re.M)
_TABLE = re.compile(r"^\|.*\|[ \t]*\n\|[ \t:|-]+\|[ \t]*\n(?:\|.*\|[ \t]*(?:\n|$))*", re.M)
_CELL_SPLIT = re.compile(r"(?<!\\)\|")


_MARKER = re.compile(r"\[(\d+)\]")
_RESOLVED = re.compile(r"\x01(\d+)\x01")  # a resolved link's URL, by its place in the answer's list


def to_mrkdwn(text: str, links: LinkResolver | None = None) -> str:
    """Normalised Markdown (an answer, a quote of the docs) as Slack mrkdwn (see the module
    docstring); `links` resolves relative links and anchors."""
    urls: list[str] = []
    if links is not None:
        text = _resolve(text, links, urls)
    text = escape(text)
    out, at = [], 0
    for code in _FENCE.finditer(text):
        out += [_prose(text[at:code.start()], urls), _FENCE_LANGUAGE.sub(r"\1", code.group(0))]
        at = code.end()
    return "".join(out) + _prose(text[at:], urls)


def _resolve(text: str, links: LinkResolver, urls: list[str]) -> str:
    """Each relative link outside code with its target replaced by a reference to its URL in
    `urls` (the citation it belongs to: the first `[n]` after it, else the last before it)."""
    code = [m.span() for m in _FENCE.finditer(text)] + [m.span() for m in _CODE_SPAN.finditer(text)]
    markers = [(m.start(), int(m.group(1))) for m in _MARKER.finditer(text)]

    def resolved(link: re.Match[str]) -> str:
        if "://" in link.group(2) or any(start <= link.start() < end for start, end in code):
            return link.group(0)
        after = [n for at, n in markers if at >= link.end()]
        before = [n for at, n in markers if at < link.start()]
        url = links(link.group(2), after[0] if after else before[-1] if before else None)
        if not url.startswith(("https://", "http://")):
            return link.group(0)
        urls.append(quote(url, safe=":/?#[]@!$&'()*+,;=%~"))  # no <, >, | or space can end the link
        return f"[{link.group(1)}](\x01{len(urls) - 1}\x01)"

    return _LINK.sub(resolved, text)


def escape(text: str) -> str:
    """Slack's three control characters; this also defuses <!channel>, <@U…> and <url|…>."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _prose(text: str, urls: list[str]) -> str:
    text = _TABLE.sub(lambda m: _table(m.group(0)), text)
    text = _ALERT.sub(lambda m: f"&gt; **{m.group(1).capitalize()}:**", text)
    text = _CALLOUT.sub(lambda m: f"&gt; **{m.group(1).rstrip(':')}:** ", text)
    text = _EXPLICIT_ID.sub("", text)
    out, at = [], 0
    for span in _LINK_OR_CODE.finditer(text):  # a code span stays as written, and so does one in a link's text
        shown = _LINK.sub(lambda m: _link(m, urls), span.group(0)) if span.group(0)[0] == "[" else span.group(0)
        out += [_inline(text[at:span.start()], urls), shown]
        at = span.end()
    return "".join(out) + _inline(text[at:], urls)


def _inline(text: str, urls: list[str]) -> str:
    return _BOLD.sub(r"*\2*", _LINK.sub(lambda m: _link(m, urls), text))


def _link(m: re.Match[str], urls: list[str]) -> str:
    resolved = _RESOLVED.fullmatch(m.group(2))
    if resolved is not None:
        return f"<{urls[int(resolved.group(1))]}|{m.group(1)}>"
    return f"{m.group(1)} ({m.group(2)})" if "://" in m.group(2) else m.group(1)


def _table(table: str) -> str:
    rows = [[cell.strip().replace("\\|", "|") for cell in _CELL_SPLIT.split(line.strip())[1:-1]]
            for line in table.strip("\n").split("\n")]
    header, body = rows[0], rows[2:]
    if len(header) > WIDE_TABLE:
        return "```\n" + table.strip("\n") + "\n```\n"
    lines = ["; ".join(f"{name}: {value}" if name else value for name, value in zip(header, row) if value)
             for row in body]
    return "\n".join(line for line in lines if line) + "\n"
