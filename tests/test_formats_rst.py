"""reStructuredText (Sphinx) into the document model (rag/formats/rst.py): real excerpts of the
flask docs under tests/fixtures/formats/rst (title, heading paths, the anchors Sphinx renders,
code with its language, admonitions, Sphinx roles and directives, includes), and every page of
formats-dev's flask/docs parsed without a trace of RST markup left in the blocks."""
from __future__ import annotations

import io
import re
import time
from contextlib import redirect_stderr
from pathlib import Path

import pytest

from rag.formats.model import Block, Parsed, Source
from rag.formats.rst import FORMAT, parse
from tests.support.formats import blocks, markup_left, reader
from tests.support.settings import SHARED

FIXTURES = Path(__file__).parent / "fixtures" / "formats" / "rst"
FLASK = SHARED / "corpora" / "formats-dev" / "flask" / "docs"


def load(rel: str, root: Path = FIXTURES) -> Parsed:
    return parse(Source(rel, (root / rel).read_text(encoding="utf-8"), {}, reader(root)))


# -- residue: what must never reach a block's text ---------------------------------------------------
_RESIDUE = {
    "underline": re.compile(r"^\s*([=\-~^*])\1{2,}\s*$"),
    "double colon": re.compile(r"::\s*$"),
    "directive": re.compile(r"^\s*\.\. \S"),
    "role": re.compile(r":[\w:.+-]+:`"),
    "substitution": re.compile(r"(?<![\w|])\|\w[\w-]*\|_?(?![\w|])"),
    "asciidoc": re.compile(r"include::|\[source|xref:|ifn?def::"),
}


def residue(block: Block) -> list[str]:
    """Lines of a block that still hold RST markup."""
    return markup_left(block, _RESIDUE)


def test_format() -> None:
    assert FORMAT.name == "rst" and ".rst" in FORMAT.suffixes and FORMAT.parse is parse


def test_title_sections_and_anchors() -> None:
    parsed = load("patterns/appfactories.rst")
    assert parsed.title == "Application Factories"
    assert parsed.sections[0].headings == () and parsed.sections[0].anchor == ""
    assert parsed.sections[0].blocks[0].text.startswith("If you are already using packages and blueprints")
    assert [(s.headings, s.anchor) for s in parsed.sections[1:]] == [
        (("Basic Factories",), "basic-factories"),
        (("Factories & Extensions",), "factories-extensions"),  # Sphinx's id: make_id of the title
        (("Using Applications",), "using-applications"),
        (("Factory Improvements",), "factory-improvements"),
    ]


def test_nested_heading_paths_and_labelled_sections() -> None:
    parsed = load("installation.rst")
    paths = {s.headings: s.anchor for s in parsed.sections}
    # `.. _install-create-env:` above it adds a second id; Sphinx renders the title's slug on the section
    assert paths[("Virtual environments", "Create an environment")] == "create-an-environment"
    assert paths[("Install Flask",)] == "install-flask"


def test_literal_block_after_double_colon_is_code_kept_whole() -> None:
    parsed = load("patterns/appfactories.rst")
    lead, code = blocks(parsed, "Basic Factories")[:2]
    assert lead == Block("prose", "The idea is to set up the application in a function. Like this:")
    assert code.kind == "code" and code.language == ""  # no `.. highlight::` in the file
    assert code.text.startswith("```\ndef create_app(config_filename):\n    app = Flask(__name__)")
    assert code.text.endswith("    return app\n```") and "\n\n    from yourapplication.model import db" in code.text


def test_code_block_keeps_its_language() -> None:
    code = [b for b in blocks(load("quickstart.rst"), "A Minimal Application") if b.kind == "code"]
    assert code[0].language == "python" and code[0].text.startswith("```python\nfrom flask import Flask\n")
    assert code[1].language == "text" and "$ flask --app hello run" in code[1].text
    text = ".. code-block:: python\n   :caption: ``flaskr/db.py``\n   :emphasize-lines: 1\n\n   import sqlite3\n"
    captioned = parse(Source("x.rst", text, {}, lambda rel: None)).sections[0].blocks
    assert captioned == (Block("code", "```python\nimport sqlite3\n```", "python", title="flaskr/db.py"),)


def test_sphinx_roles_render_as_their_text() -> None:
    parsed = load("config.rst")
    intro = " ".join(b.text for b in parsed.sections[0].blocks)
    assert "The `config` attribute of the `Flask` object." in intro  # :attr:`~flask.Flask.config`
    basics = blocks(parsed, "Configuration Basics")
    assert basics[-2].text == "To update multiple keys at once you can use the `dict.update` method:"
    quick = load("quickstart.rst").sections[0].blocks[0].text
    assert quick == "Eager to get started? This page gives a good introduction to Flask. Follow Installation " \
                    "to set up a project and install Flask first."  # :doc: → the page's title


def test_domain_objects_versions_and_nested_admonitions() -> None:
    values = blocks(load("config.rst"), "Builtin Configuration Values")
    texts = [b.text for b in values]
    assert texts[1].startswith("`DEBUG`: Whether debug mode is enabled.")
    assert "Default: `False`" in texts
    assert "New in version 3.1." in texts
    assert "Changed in version 2.3: Not set by default, does not fall back to `SERVER_NAME`." in texts
    warning = next(b for b in values if b.kind == "admonition")
    assert warning.title == "Warning"
    assert warning.text.startswith("**Warning:** If this is changed after the browser created a cookie is created")
    assert "`SESSION_COOKIE_NAME`" in warning.text


def test_admonitions_keep_title_and_text() -> None:
    minimal = blocks(load("quickstart.rst"), "A Minimal Application")
    titled = next(b for b in minimal if b.kind == "admonition" and b.title == "Externally Visible Server")
    assert titled.text.startswith("**Externally Visible Server:** If you run the server you will notice that the")
    assert "command line:\n\n```\n$ flask run --host=0.0.0.0\n```\n\nThis tells your operating system" in titled.text
    debug = [b for b in blocks(load("quickstart.rst"), "Debug Mode") if b.kind == "admonition"]
    assert debug[0].title == "Warning" and debug[0].text.startswith("**Warning:** The debugger allows executing")


def test_tabs_keep_each_label_before_its_code() -> None:
    section = blocks(load("installation.rst"), "Virtual environments", "Activate the environment")
    assert [b.kind for b in section[:5]] == ["prose", "prose", "code", "prose", "code"]
    assert section[1].text == "**macOS/Linux:**" and "$ . .venv/bin/activate" in section[2].text
    assert section[3].text == "**Windows:**" and "> .venv\\Scripts\\activate" in section[4].text


def test_lists_and_links() -> None:
    deps = blocks(load("installation.rst"), "Dependencies")
    bullets = next(b for b in deps if b.kind == "list")
    assert bullets.text.split("\n")[0] == ("- [Werkzeug](https://palletsprojects.com/p/werkzeug/) implements WSGI, "
                                           "the standard Python interface between applications and servers.")
    numbered = next(b for b in load("patterns/appfactories.rst").sections[0].blocks if b.kind == "list")
    assert numbered.text.startswith("1. Testing. You can have instances")
    assert "\n2. Multiple instances." in numbered.text


def test_include_is_resolved_inside_the_docs_root_and_listed() -> None:
    text = "Notes\n=====\n\n.. include:: _snippets/python-version.rst\n\n.. include:: ../../outside.rst\n"
    parsed = parse(Source("notes.rst", text, {}, reader(FIXTURES)))
    assert parsed.includes == ("_snippets/python-version.rst",)
    assert [(s.headings, s.anchor) for s in parsed.sections] == [((), ""), (("Python Version",), "python-version")]
    assert parsed.sections[1].blocks[0].text.startswith("We recommend using the latest version of Python.")


def test_literalinclude_outside_the_root_is_dropped() -> None:
    parsed = load("license.rst")
    assert parsed.title == "BSD-3-Clause License" and parsed.includes == ()
    assert all(not s.blocks for s in parsed.sections)


def test_literalinclude_inside_the_root_is_code_with_its_language() -> None:
    text = ".. literalinclude:: patterns/appfactories.rst\n   :language: rst\n   :lines: 1-2\n"
    parsed = parse(Source("demo.rst", text, {}, reader(FIXTURES)))
    code = "```rst\nApplication Factories\n=====================\n```"
    assert parsed.sections[0].blocks == (Block("code", code, "rst"),)
    assert parsed.includes == ("patterns/appfactories.rst",)


def test_ref_shows_the_labelled_title_in_the_page_else_the_label() -> None:
    text = ("Page\n====\n\nSee :ref:`details`, :ref:`Other <elsewhere>` and :ref:`elsewhere`.\n\n"
            ".. _details:\n\nThe Details\n-----------\n\nText.\n")
    parsed = parse(Source("p.rst", text, {}, lambda rel: None))
    assert parsed.sections[0].blocks[0].text == "See The Details, Other and elsewhere."
    assert parsed.sections[1].anchor == "the-details"  # the title's id; the label is a second id


def test_unknown_markup_never_errors_or_prints() -> None:
    text = (":orphan:\n\nTitle\n=====\n\n.. frobnicate:: Some argument\n   :flag:\n\n   Body *text*.\n\n"
            "Uses :unknown:`thing <x>` and |undefined| and `default role`.\n\n.. raw:: html\n\n   <b>x</b>\n")
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        parsed = parse(Source("x.rst", text, {}, lambda rel: None))
    assert stderr.getvalue() == ""
    assert parsed.meta == {"orphan": ""}
    assert [b.text for b in parsed.sections[0].blocks] == [
        "Some argument", "Body text.", "Uses thing and and `default role`."]


def test_residue_check_catches_raw_rst() -> None:
    raw = (FIXTURES / "config.rst").read_text(encoding="utf-8")
    assert residue(Block("prose", raw))


@pytest.mark.shared
def test_every_flask_page_parses_without_rst_residue() -> None:
    files = sorted(FLASK.rglob("*.rst"))
    assert len(files) > 50
    read = reader(FLASK)
    problems, size, started = [], 0, time.perf_counter()
    for path in files:
        rel = path.relative_to(FLASK).as_posix()
        text = path.read_text(encoding="utf-8")
        size += len(text.encode())
        parsed = parse(Source(rel, text, {}, read))
        assert "error" not in parsed.meta, (rel, parsed.meta)
        assert parsed.title, rel
        problems.extend(f"{rel}: {found}" for s in parsed.sections for b in s.blocks for found in residue(b))
    elapsed = time.perf_counter() - started
    assert problems == []
    assert elapsed < 1.5 * size / 100_000 + 1, f"{elapsed:.2f}s for {size / 1000:.0f} KB"
