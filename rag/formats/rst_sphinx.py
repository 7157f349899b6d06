"""docutils set up as Sphinx sets it up: the settings (Sphinx's, with every report swallowed) and
the roles and directives registered so that a Sphinx document parses without Sphinx and without
an error. Every Sphinx or unknown directive becomes a generic `directive_node` that rst_blocks.py
renders by family; `.. include::` and `.. literalinclude::` are read through the document's
Context (rst_includes.py); a Sphinx role becomes its shown text, in code for the code roles, and a
`:ref:` without a title a `label_ref` resolved once the whole doctree is known. `register` adds
whatever names a text uses that docutils does not know, `register_sphinx` Sphinx's own (once).
"""
from __future__ import annotations

import re
from typing import Any

from docutils import frontend, nodes, utils
from docutils.parsers.rst import Directive, Parser, directives, roles
from docutils.parsers.rst.languages import en as _en
from docutils.readers import standalone

from rag.formats.rst_includes import Context, include_window
from rag.formats.rst_inline import SPACE
from rag.formats.rst_nodes import CODE, DROP, OBJECTS, TABS, VERSIONS, directive_node, family_of, label_ref


class _Sink:
    """docutils' warning stream: swallowed (a parser must never write to stderr)."""

    def write(self, _text: str) -> None:
        pass

    def flush(self) -> None:
        pass


SETTINGS = frontend.get_default_settings(Parser, standalone.Reader)
for _key, _value in {
    "report_level": 5, "halt_level": 5, "exit_status_level": 5, "warning_stream": _Sink(),
    "traceback": True, "file_insertion_enabled": False, "raw_enabled": False,
    "input_encoding": "utf-8", "output_encoding": "utf-8", "doctitle_xform": False,
    "sectsubtitle_xform": False, "docinfo_xform": True, "auto_id_prefix": "id",
    "syntax_highlight": "none", "smart_quotes": False, "language_code": "en",
    "character_level_inline_markup": False, "pep_references": False, "rfc_references": False,
}.items():
    setattr(SETTINGS, _key, _value)


_MAX_INCLUDES = 64

_SPHINX_ROLES = ("ref", "doc", "class", "meth", "func", "attr", "mod", "data", "exc", "obj",
                 "const", "any", "term", "envvar", "option", "command", "program", "file", "samp",
                 "kbd", "guilabel", "menuselection", "mimetype", "makevar", "keyword", "token",
                 "abbr", "dfn", "numref", "download", "pep", "rfc", "issue", "pr", "gh", "ghsa")
_CODE_ROLES = {"class", "meth", "func", "attr", "mod", "data", "exc", "obj", "const", "envvar",
               "option", "command", "program", "file", "samp", "kbd", "mimetype", "makevar",
               "keyword", "token", "member", "macro", "type", "var", "struct", "enum",
               "enumerator", "decorator", "property", "method", "function", "attribute", "cmd"}

_DIRECTIVE_NAME = re.compile(r"^[ \t]*\.\.[ \t]+([A-Za-z0-9][\w.+:-]*)[ \t]*::", re.M)
_ROLE_NAME = re.compile(r"(?<![\w`]):([A-Za-z0-9][\w.+:-]*):`")
_TITLE_TARGET = re.compile(r"^(.*?)\s*<([^<>]+)>$", re.S)


class _AnyOptions(dict[str, Any]):
    """An option spec that accepts every option (its value as text): Sphinx directives take many."""

    def __missing__(self, _key: str) -> Any:
        return directives.unchanged


class _Generic(Directive):
    """Every Sphinx or unknown directive: a `directive_node` the renderer then reads by name."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec = _AnyOptions(name=directives.unchanged, **{"class": directives.unchanged})

    def run(self) -> list[nodes.Node]:
        name = self.name.lower()
        family = family_of(name)
        node = directive_node(name=name, family=family, argument=" ".join(self.arguments).strip(),
                              options=dict(self.options))
        if family == "include":
            return self._include()
        if family in ("code", "literalinclude"):
            node["caption"] = self._caption()
            if family == "literalinclude":
                self._literalinclude(node)
            else:
                node["code"] = "\n".join(self.content)
        elif family != "drop":
            node += self._argument(family)
            self.state.nested_parse(self.content, self.content_offset, node)
        return [node]

    def _caption(self) -> str:
        """A code block's `:caption:` as plain text (it may hold inline markup)."""
        caption = str(self.options.get("caption") or "")
        parsed, _messages = self.state.inline_text(caption, self.lineno) if caption else ([], [])
        return SPACE.sub(" ", "".join(n.astext() for n in parsed)).strip()

    def _argument(self, family: str) -> nodes.inline:
        """The argument's shown text, parsed as inline markup as Sphinx does (a version's number
        and an object's signature are kept apart, in node["argument"])."""
        shown = " ".join(self.arguments).strip()
        if family == "version":
            shown = shown.partition(" ")[2] if " " in shown.split("\n", 1)[0] else shown.partition("\n")[2]
        elif family == "object":
            shown = ""
        parsed, _messages = self.state.inline_text(shown, self.lineno) if shown else ([], [])
        return nodes.inline("", "", *parsed, classes=["docsbot-argument"])

    def _context(self) -> Context:
        context: Context = self.state.document.settings.docsbot
        return context

    def _target(self) -> str | None:
        context = self._context()
        if not self.arguments or len(context.includes) >= _MAX_INCLUDES:
            return None
        return context.resolve(self.arguments[0].strip(), self.state_machine.get_source(self.lineno))

    def _include(self) -> list[nodes.Node]:
        """`.. include::` read through Source.read (inside the docs root only) and parsed in place."""
        rel = self._target()
        text = self._context().fetch(rel) if rel else None
        if rel is None or text is None:
            return []
        text = include_window(text, self.options)
        if "literal" in self.options or "code" in self.options:
            code = directive_node(name="code", family="code", options={},
                                  argument=str(self.options.get("code") or ""), code=text)
            return [code]
        register(text)
        self.state_machine.insert_input(text.splitlines(), rel)
        return []

    def _literalinclude(self, node: directive_node) -> None:
        rel = self._target()
        text = self._context().fetch(rel) if rel and "pyobject" not in self.options else None
        if text is None:
            node["family"] = "drop"  # outside the docs root, missing, or a :pyobject: we cannot cut
        else:
            node["family"], node["code"] = "code", include_window(text, self.options)
            node["argument"] = str(self.options.get("language") or "")


def _xref(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
          options: dict[str, Any] | None = None, content: list[str] | None = None,
          ) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    """A Sphinx role as its text: `Title <target>` → Title; `~a.b.c` → `c`; code roles as code."""
    name = name.lower()
    bare = name.split(":", 1)[1] if ":" in name else name
    text = utils.unescape(text)
    title, target = _split_title(text)
    if bare == "ref" and not title:
        return [label_ref(rawtext, target, label=target)], []
    if bare == "doc" and not title:
        context: Context = inliner.document.settings.docsbot
        title = context.doc_title(target, inliner.reporter.source)
    shown = title or _shown_target(bare, target)
    if bare in _CODE_ROLES and not title:
        return [nodes.literal(rawtext, shown)], []
    return [nodes.Text(shown)], []


def _split_title(text: str) -> tuple[str, str]:
    match = _TITLE_TARGET.match(text)
    return (match.group(1).strip(), match.group(2).strip()) if match and match.group(1).strip() else ("", text.strip())


def _shown_target(role: str, target: str) -> str:
    if role == "pep":
        return f"PEP {target}"
    if role == "rfc":
        return f"RFC {target}"
    if role in ("issue", "pr"):
        return f"#{target}"
    if role == "samp":
        return re.sub(r"(?<!\\)[{}]", "", target).replace("\\{", "{").replace("\\}", "}")
    if role == "menuselection":
        return target.replace("-->", ">")
    if role == "guilabel":
        return re.sub(r"&(?=\w)", "", target)
    if role == "abbr":
        return target
    shown = target.lstrip("!").lstrip(".")  # Sphinx's PyXRefRole: `.name` is a suffix search
    if shown.startswith("~"):
        return shown[1:].rsplit(".", 1)[-1]
    return shown


_reporter = utils.Reporter("", 5, 5, stream=_Sink())  # type: ignore[arg-type]
_probe = utils.new_document("", SETTINGS)


def register(text: str) -> None:
    """Registers every directive and role the text names that docutils does not know."""
    for name in {m.lower() for m in _DIRECTIVE_NAME.findall(text)}:
        known, _messages = directives.directive(name, _en, _probe)
        if known is None:
            directives.register_directive(name, _Generic)
    for name in {m.lower() for m in _ROLE_NAME.findall(text)}:
        known_role, _messages = roles.role(name, _en, 0, _reporter)
        if known_role is None:
            roles.register_local_role(name, _xref)


def register_sphinx() -> None:
    for name in (*CODE, *DROP, *VERSIONS, *OBJECTS, *TABS, "seealso", "todo", "only",
                 "tabs", "glossary", "hlist", "centered", "ifconfig", "versionremoved"):
        directives.register_directive(name, _Generic)
    for role in _SPHINX_ROLES:
        roles.register_local_role(role, _xref)
    for domain in ("py", "c", "cpp", "js", "std"):
        for role in ("class", "meth", "func", "attr", "mod", "data", "exc", "obj", "const"):
            roles.register_local_role(f"{domain}:{role}", _xref)
    roles.register_local_role("title-reference", _code_role)
    roles.register_local_role("title", _code_role)


def _code_role(name: str, rawtext: str, text: str, lineno: int, inliner: Any,
               options: dict[str, Any] | None = None, content: list[str] | None = None,
               ) -> tuple[list[nodes.Node], list[nodes.system_message]]:
    return [nodes.literal(rawtext, utils.unescape(text))], []
