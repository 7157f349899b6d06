"""AsciiDoc inline markup as normalised Markdown text (see rag/formats/asciidoc.py for the subset).

Done in Asciidoctor's order, with placeholders so a later step never rewrites an earlier result:
escapes and passthroughs, attribute references, monospace, macros (links, xrefs, kbd, footnotes,
images), then the quotes (bold, italic, highlight, super/subscript), which are dropped: the text
is kept plain. An escaped attribute reference or macro (`\\{name}`, `\\xref:…[]`) is a literal the
reader types, so it is kept as inline code.
"""
from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field

BUILTIN_ATTRIBUTES = {
    "empty": "", "blank": "", "sp": " ", "nbsp": " ", "zwsp": "", "wj": "", "apos": "'",
    "quot": '"', "lsquo": "‘", "rsquo": "’", "ldquo": "“", "rdquo": "”", "deg": "°", "plus": "+",
    "brvbar": "¦", "vbar": "|", "amp": "&", "lt": "<", "gt": ">", "startsb": "[", "endsb": "]",
    "caret": "^", "asterisk": "*", "tilde": "~", "backslash": "\\", "backtick": "`",
    "two-colons": "::", "two-semicolons": ";;", "cpp": "C++", "cxx": "C++", "pp": "++",
    "idprefix": "_", "idseparator": "_", "source-language": "",
}

_OPEN, _CLOSE = "\ue000", "\ue001"
_HOLE = re.compile(f"{_OPEN}(\\d+){_CLOSE}")
_BRACKET = r"\[((?:\\\]|[^\]])*)\]"
_ATTRIBUTE = re.compile(r"\{([A-Za-z0-9_][\w-]*)\}")
_DIRECTIVE_ATTRIBUTE = re.compile(r"\{(?:set|counter2?):[^}]*\}")
_ESCAPED_ATTRIBUTE = re.compile(r"\\(\{[A-Za-z0-9_][\w-]*\})")
_ESCAPED_MACRO = re.compile(r"\\((?:xref|link|include|image|kbd|btn|menu|footnote|pass|ifn?def|endif|ifeval"
                            r"|mailto|icon|stem|anchor|https?):\S*?" + _BRACKET + ")")
_PASS_MACRO = re.compile(r"pass:[a-z,]*" + _BRACKET)
_TRIPLE_PLUS = re.compile(r"\+\+\+(.+?)\+\+\+")
_DOUBLE_PLUS = re.compile(r"\+\+(.+?)\+\+")
_SINGLE_PLUS = re.compile(r"(?<![\w+\\])\+(\S|\S.*?\S)\+(?![\w+])")
_LITERAL_CODE = re.compile(r"(?<![\w`\\])`\+(.+?)\+`(?![\w`])")
_CODE_UNCONSTRAINED = re.compile(r"(?<!\\)``(.+?)``")
_CODE = re.compile(r"(?<![\w`\\])`(\S|\S.*?\S)`(?![\w`])")
_XREF = re.compile(r"(?<![\w\\])xref:([^\s\[]*)" + _BRACKET)
_CROSS = re.compile(r"(?<!\\)<<([^<>,]+?)(?:,\s*([^<>]*?))?>>")
_LINK = re.compile(r"(?<![\w\\])(?:link:|mailto:)([^\s\[]+)" + _BRACKET)
_URL = re.compile(r"(?<![\w/\\\"'=])<?((?:https?|ftp|irc)://[^\s\[\]<>\"]*[^\s\[\]<>\".,;:!?)])>?(?:" + _BRACKET + ")?")
_KBD = re.compile(r"(?<![\w\\])(?:kbd|btn):" + _BRACKET)
_MENU = re.compile(r"(?<![\w\\])menu:([^\s\[]+)" + _BRACKET)
_FOOTNOTE = re.compile(r"\s*(?<!\\)footnote(?:ref)?:([\w-]*)" + _BRACKET)
_DROPPED_MACRO = re.compile(r"(?<![\w\\])(?:image|icon|anchor|indexterm):[^\s\[]*" + _BRACKET)
_STEM = re.compile(r"(?<![\w\\])(?:stem|latexmath|asciimath):" + _BRACKET)
_INDEX_TERM2 = re.compile(r"(?<![\w\\])indexterm2:" + _BRACKET)
_INLINE_ANCHOR = re.compile(r"(?<!\\)\[\[\[?[\w:.-]+(?:,[^\]]*)?\]\]\]?")
_CONCEALED_INDEX = re.compile(r"\(\(\((.+?)\)\)\)")
_VISIBLE_INDEX = re.compile(r"\(\((.+?)\)\)")
_ROLE_SPAN = re.compile(r"(?<!\\)\[[^\]\n]*\]##(.+?)##|(?<![\w\\])\[[^\]\n]*\]#(\S|\S.*?\S)#(?!\w)")
_QUOTES = (
    re.compile(r"(?<!\\)\*\*(.+?)\*\*"),
    re.compile(r"(?<!\\)__(.+?)__"),
    re.compile(r"(?<!\\)##(.+?)##"),
    re.compile(r"(?<![\w*\\])\*(\S|\S.*?\S)\*(?![\w*])"),
    re.compile(r"(?<![\w\\])_(\S|\S.*?\S)_(?!\w)"),
    re.compile(r"(?<![\w#\\&])#(\S|\S.*?\S)#(?!\w)"),
    re.compile(r"(?<!\\)\^(\S+?)\^"),
    re.compile(r"(?<![\\~])~(\S+?)~(?!~)"),
)
_CURVED = re.compile(r"([\"'])`(.+?)`\1")
_ESCAPE = re.compile(r"\\(?=[*_#`^~\[\]{}<+(&])")
_ROLE_PREFIX = re.compile(r"(?<!\\)\[[.#%][\w.#%-]*\](?=[*_#`+])")
_ESCAPED_ENTITY = re.compile(r"\\(&(?:#\d+|#x[\da-fA-F]+|[a-zA-Z]\w*);)")
_ENTITY = re.compile(r"&(?:#\d+|#x[\da-fA-F]+|[a-zA-Z]\w*);")
_SPACE = re.compile(r"[ \t]+")

PageTitle = Callable[[str], str]  # xref target → the page's title (its name when unknown)


def code_span(text: str) -> str:
    """Inline code in Markdown, with a longer backtick run when the text holds one."""
    text = text.strip()
    if not text:
        return ""
    return f"`` {text} ``" if "`" in text else f"`{text}`"


def fence(code: str, language: str) -> str:
    ticks = "```"
    while ticks in code:
        ticks += "`"
    return f"{ticks}{language}\n{code.strip(chr(10))}\n{ticks}"


def subs_attributes(text: str, attributes: dict[str, str]) -> str:
    """`{name}` references replaced (an undefined one is dropped, never left in braces)."""
    text = _DIRECTIVE_ATTRIBUTE.sub("", text)
    def value(m: re.Match[str]) -> str:
        name = m.group(1).lower()
        return attributes.get(name, BUILTIN_ATTRIBUTES.get(name, ""))

    return _ATTRIBUTE.sub(value, text)


def bracket_text(raw: str) -> str:
    """A macro's bracketed text: `\\]` unescaped, and named attributes (`window=_blank`) dropped."""
    raw = raw.replace("\\]", "]")
    if "=" in raw:
        parts = [p for p in re.split(r",(?=(?:[^\"]*\"[^\"]*\")*[^\"]*$)", raw) if "=" not in p.split(" ", 1)[0]]
        raw = ",".join(parts)
    raw = raw.strip().strip('"')
    return raw[:-1] if raw.endswith("^") else raw


def _quotes(text: str) -> str:
    """Bold, italic, highlight, super/subscript and role spans as their plain text."""
    if not any(mark in text for mark in "*_#^~"):
        return text
    for _ in range(3):
        before = text
        text = _ROLE_SPAN.sub(lambda m: m.group(1) or m.group(2), text)
        for pattern in _QUOTES:
            text = pattern.sub(lambda m: m.group(1), text)
        if text == before:
            break
    return text


def _menu(first: str, rest: str) -> str:
    """`menu:File[Save > Save As]` as `File > Save > Save As`."""
    return " > ".join([first, *[part.strip() for part in rest.split(">") if part.strip()]])


@dataclass
class Inline:
    """Renders inline text with the document's attributes (which change as entries are read)."""

    attributes: dict[str, str]
    page_title: PageTitle
    holes: list[tuple[str, str]] = field(default_factory=list)  # (markdown, plain) per placeholder

    def text(self, raw: str, plain: bool = False) -> str:
        """One paragraph's (or cell's, or title's) text; `plain` drops code and link markup too."""
        self.holes = []
        out = self._substitute(raw)
        out = self._fill(out, plain)
        return _SPACE.sub(" ", out).strip()

    def _hole(self, markdown: str, plain: str | None = None) -> str:
        self.holes.append((markdown, markdown if plain is None else plain))
        return f"{_OPEN}{len(self.holes) - 1}{_CLOSE}"

    def _fill(self, text: str, plain: bool) -> str:
        for _ in range(8):  # placeholders nest (a link's text holds code)
            if _OPEN not in text:
                break
            text = _HOLE.sub(lambda m: self.holes[int(m.group(1))][1 if plain else 0], text)
        return text

    def _raw(self, text: str) -> str:
        """A placeholder's text as plain characters (for code spans and URLs)."""
        return self._fill(text, True)

    def _substitute(self, text: str) -> str:
        """Each step runs only when its marker character is in the text (most text has none)."""
        if "\\" in text:
            text = _ESCAPED_ATTRIBUTE.sub(self._literal, text)
            text = _ESCAPED_MACRO.sub(self._literal, text)
            text = _ESCAPED_ENTITY.sub(lambda m: self._hole(m.group(1)), text)
        if "+" in text or "pass:" in text:
            text = self._passthroughs(text)
        if "{" in text:
            text = subs_attributes(text, self.attributes)
        if "`" in text:
            text = self._code(_CURVED.sub(r"\1\2\1", text))
        if "[" in text or "<<" in text or "((" in text or "://" in text:
            text = self._macros(text)
        if "[" in text:
            text = _ROLE_PREFIX.sub("", text)
        text = _quotes(text)
        if "&" in text:
            text = _ENTITY.sub(lambda m: html.unescape(m.group(0)), text)
        return _ESCAPE.sub("", text) if "\\" in text else text

    def _literal(self, m: re.Match[str]) -> str:
        """An escaped reference or macro: the literal the reader types, as inline code."""
        return self._hole(code_span(m.group(1)), m.group(1))

    def _passthroughs(self, text: str) -> str:
        text = _LITERAL_CODE.sub(self._literal, text)
        for pattern in (_PASS_MACRO, _TRIPLE_PLUS, _DOUBLE_PLUS, _SINGLE_PLUS):
            text = pattern.sub(lambda m: self._hole(m.group(1).replace("\\]", "]")), text)
        return text

    def _code(self, text: str) -> str:
        def one(m: re.Match[str]) -> str:
            inner = _ESCAPE.sub("", self._raw(m.group(1)))
            return self._hole(code_span(inner), inner)

        return _CODE.sub(one, _CODE_UNCONSTRAINED.sub(one, text))

    def _macros(self, text: str) -> str:
        text = _INLINE_ANCHOR.sub("", text)
        text = _CONCEALED_INDEX.sub("", text)
        text = _VISIBLE_INDEX.sub(lambda m: m.group(1), text)
        text = _FOOTNOTE.sub(lambda m: f" ({bracket_text(m.group(2))})" if m.group(2).strip() else "", text)
        text = _DROPPED_MACRO.sub("", text)
        text = _STEM.sub(lambda m: self._hole(code_span(m.group(1))), text)
        text = _INDEX_TERM2.sub(lambda m: m.group(1), text)
        text = _KBD.sub(lambda m: bracket_text(m.group(1)), text)
        text = _MENU.sub(lambda m: _menu(m.group(1), bracket_text(m.group(2))), text)
        text = _XREF.sub(lambda m: self._xref(m.group(1), bracket_text(m.group(2))), text)
        text = _CROSS.sub(lambda m: self._xref(m.group(1).strip(), (m.group(2) or "").strip()), text)
        text = _LINK.sub(lambda m: self._link(m.group(1), bracket_text(m.group(2))), text)
        return _URL.sub(lambda m: self._link(m.group(1), bracket_text(m.group(2) or "")), text)

    def _xref(self, target: str, shown: str) -> str:
        if shown:
            return shown
        target = self._raw(target)
        if ".adoc" not in target and "#" not in target:  # <<id>>: the title, once all are known
            return self._hole(f"\ue002{target}\ue003")
        return self.page_title(target)

    def _link(self, url: str, shown: str) -> str:
        url = self._raw(url)
        external = url.startswith(("http://", "https://", "ftp://", "irc://"))
        if not shown or shown == url:
            return self._hole(url)
        shown = _ESCAPE.sub("", _quotes(shown))
        return self._hole(f"[{shown}]({url})", shown) if external else shown
