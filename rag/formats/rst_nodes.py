"""The doctree vocabulary shared by the Sphinx directives that build it (rst_sphinx.py) and the
renderer that reads it (rst_blocks.py, rst_inline.py): the directive families by name, which
decide how a directive is parsed and how it is shown, `family_of` that sorts a name into one, and
the two node types docutils lacks (`directive_node`, `label_ref`). Kept apart so that both sides
import it and neither imports the other.
"""
from __future__ import annotations

from docutils import nodes


# Directive families, by lower-case name (a domain prefix like `py:` is looked up without it too).
CODE = {"code-block", "sourcecode", "code", "code-tab", "productionlist", "doctest", "testcode",
        "testoutput", "testsetup", "ipython", "jupyter-execute", "mermaid", "graphviz", "digraph",
        "graph", "uml", "plantuml", "prompt", "console"}
DROP = {"toctree", "automodule", "autoclass", "autofunction", "automethod", "autodata",
        "autoattribute", "autoexception", "autodecorator", "autoproperty", "autosummary",
        "currentmodule", "module", "index", "highlight", "tabularcolumns", "raw", "meta",
        "contents", "sectnum", "sectionauthor", "moduleauthor", "codeauthor", "default-domain",
        "rst-class", "program", "literalinclude", "include", "toc", "spelling",
        "click", "autoprogram", "automodsumm", "inheritance-diagram"}
ADMONITIONS = {"seealso": "See also", "todo": "Todo", "attention": "Attention",
               "caution": "Caution", "danger": "Danger", "error": "Error", "hint": "Hint",
               "important": "Important", "note": "Note", "tip": "Tip", "warning": "Warning"}
VERSIONS = {"versionadded": "New in version", "versionchanged": "Changed in version",
            "deprecated": "Deprecated since version", "versionremoved": "Removed in version"}
OBJECTS = {"function", "class", "method", "attribute", "data", "exception", "decorator",
           "decoratormethod", "classmethod", "staticmethod", "property", "type", "envvar",
           "option", "cmdoption", "describe", "object", "confval", "setting", "member", "macro",
           "struct", "enum", "enumerator", "var", "role", "directive"}
TABS = {"tab", "group-tab", "tab-item", "dropdown", "card", "grid-item-card"}
_DOMAINS = {"py", "c", "cpp", "js", "rst", "std", "math", "http"}


class directive_node(nodes.General, nodes.Element):  # noqa: N801 (docutils names nodes in lower case)
    """A Sphinx or unknown directive: name, argument, options, raw `code` or parsed children."""


class label_ref(nodes.Inline, nodes.TextElement):  # noqa: N801
    """A `:ref:` without a title: shown as the labelled section's title once the doc is read."""


def family_of(name: str) -> str:
    """The family of a directive name: how it is parsed (rst_sphinx.py) and shown (rst_blocks.py)."""
    bare = name.split(":", 1)[1] if ":" in name and name.split(":", 1)[0] in _DOMAINS else name
    if bare in ("include", "literalinclude"):
        return bare
    for family, names in (("code", CODE), ("drop", DROP), ("version", VERSIONS),
                          ("admonition", ADMONITIONS), ("tab", TABS)):
        if bare in names:
            return family
    if bare in OBJECTS or bare.startswith("auto"):
        return "object" if not bare.startswith("auto") else "drop"
    return "generic"
