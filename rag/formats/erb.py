"""Middleman pages with ERB (`*.html.md.erb`, GOV.UK's tech-docs-template): the Markdown parser on
the text the site renders, the Ruby left out.

* `# <%= current_page.data.title %>` (the H1 of almost every tech-docs page) is the front matter
  `title`: the title exists nowhere else in the file;
* `<%= partial 'partials/x' %>` is the partial's text when it is in the tree (`partials/_x.html.erb`
  in the page's folder or any folder above it, as Middleman looks it up from its source root),
  else nothing; a partial's own ERB is dropped;
* `<%= warning_text('...') %>` is the warning the template shows (a `> [!WARNING]` alert);
* a block that runs once per item or captures text for elsewhere (`<% x.each do |r| %>`,
  `<% content_for :sidebar do %>`, through its `<% end %>`) is left out whole: what it shows is
  built from data or goes to the sidebar, never the page text; an `if` block keeps its text;
* every other ERB tag is dropped.
Only `.md.erb` files are pages: `layouts/*.erb` and partials (`_x.html.erb`) are not.
"""
from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from dataclasses import replace

from rag.formats.markdown import parse_markdown
from rag.formats.model import Format, Parsed, Source

_TAG = re.compile(r"<%(=|-|#)?(.*?)-?%>", re.S)
_TITLE = re.compile(r"^(#[ \t]+)<%=\s*current_page\.data\.title\s*=?%>[ \t]*$", re.M)
_PARTIAL = re.compile(r"""partial\s*\(?\s*['"]([\w./-]+)['"]""")
_WARNING = re.compile(r"""warning_text\s*\(?\s*(['"])(.*)\1""", re.S)
_BLOCK_OPEN = re.compile(r"\bdo\s*(?:\|[^|]*\|)?\s*$")
_IF_OPEN = re.compile(r"^(?:if|unless|case|while|until|begin)\b")
_PARTIAL_SUFFIXES = (".html.erb", ".erb", ".html.md.erb", ".html.md", ".md", ".html")


def is_page(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return name.endswith(".md.erb") and not name.startswith("_") and "layouts" not in path.split("/")[:-1]


def parse_erb(source: Source) -> Parsed:
    title = source.meta.get("title")
    included: list[str] = []
    text = _TITLE.sub(lambda m: m.group(1) + title.strip() if isinstance(title, str) else "", source.text)
    text = _rendered(text, lambda name: _partial(source, name, included))
    parsed = parse_markdown(replace(source, text=text))
    return replace(parsed, includes=tuple(dict.fromkeys((*included, *parsed.includes))))


FORMAT = Format("middleman", (".erb",), parse_erb, is_page)


def _rendered(text: str, partial: Callable[[str], str]) -> str:
    """The text with its ERB tags replaced by what they show (see the module docstring)."""
    out: list[str] = []
    stack: list[bool] = []  # per open block: whether its text is left out
    at = 0
    for tag in _TAG.finditer(text):
        if not any(stack):
            out.append(text[at:tag.start()])
        at = tag.end()
        kind, code = tag.group(1) or "", tag.group(2).strip()
        if kind == "#":
            continue
        if code == "end" or code.startswith("end "):
            if stack:
                stack.pop()
            continue
        if kind != "=" and _BLOCK_OPEN.search(code):
            stack.append(True)
        elif kind != "=" and _IF_OPEN.match(code):
            stack.append(False)
        elif kind == "=" and not any(stack):
            out.append(_output(code, partial))
    if not any(stack):
        out.append(text[at:])
    return "".join(out)


def _output(code: str, partial: Callable[[str], str]) -> str:
    if found := _PARTIAL.match(code):
        return partial(found.group(1))
    if warning := _WARNING.match(code):
        return f"\n\n> [!WARNING]\n> {' '.join(warning.group(2).split())}\n\n"
    return ""


def _partial(source: Source, name: str, included: list[str]) -> str:
    """A partial's text (its ERB dropped), looked up from the page's folder up to the docs root;
    "" when none is in the tree."""
    folder, base = posixpath.split(name)
    folders = source.path.split("/")[:-1]
    for depth in range(len(folders), -1, -1):
        for suffix in _PARTIAL_SUFFIXES:
            rel = posixpath.normpath(posixpath.join(*folders[:depth], folder, f"_{base}{suffix}"))
            if rel.startswith("../") or (text := source.read(rel)) is None:
                continue
            included.append(rel)
            return _TAG.sub("", text)
    return ""
