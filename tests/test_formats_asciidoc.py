"""AsciiDoc (Asciidoctor/Antora) into the document model (rag/formats/asciidoc.py): real pages of
the asciidoctor-pdf docs under tests/fixtures/formats/asciidoc (an Antora component: title,
heading paths, Asciidoctor's ids, code with its language, admonitions, tables, includes of
examples, pages and partials by resource id, xrefs), the Antora non-page rule, and every page of
formats-dev's asciidoctor-pdf/docs parsed without a trace of AsciiDoc markup left in the blocks."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from rag.formats.asciidoc import FORMAT, is_antora_non_page, parse
from rag.formats.model import Block, Parsed, Source
from tests.support.formats import blocks, markup_left, reader
from tests.support.settings import SHARED

FIXTURES = Path(__file__).parent / "fixtures" / "formats" / "asciidoc"
PDF_DOCS = SHARED / "corpora" / "formats-dev" / "asciidoctor-pdf" / "docs"


def load(rel: str, root: Path = FIXTURES) -> Parsed:
    return parse(Source(rel, (root / rel).read_text(encoding="utf-8"), {}, reader(root)))


def page(text: str, rel: str = "modules/ROOT/pages/demo.adoc") -> Parsed:
    return parse(Source(rel, text, {}, reader(FIXTURES)))


# -- residue: what must never reach a block's text ---------------------------------------------------
_RESIDUE = {
    "delimiter or underline": re.compile(r"^\s*([=\-~^*/.+_])\1{2,}\s*$"),
    "double colon": re.compile(r"::\s*$"),
    "attribute reference": re.compile(r"\{[A-Za-z0-9_][\w-]*\}"),
    "include": re.compile(r"include::"),
    "source style": re.compile(r"\[source"),
    "xref": re.compile(r"xref:"),
    "conditional": re.compile(r"\b(?:ifn?def|ifeval|endif)::"),
    "block title": re.compile(r"^\.[A-Za-z0-9]"),
    "attribute entry": re.compile(r"^:[\w-]+:(\s|$)"),
    "table": re.compile(r"^[|!,:]==="),
    "continuation": re.compile(r"^\+$"),
    "cross reference": re.compile(r"<<[^<>]+>>"),
}


def residue(block: Block) -> list[str]:
    """Lines of a block that still hold AsciiDoc markup."""
    return markup_left(block, _RESIDUE, with_title=True)


def test_format() -> None:
    assert FORMAT.name == "asciidoc" and ".adoc" in FORMAT.suffixes and FORMAT.parse is parse


def test_title_header_attributes_and_auto_ids() -> None:
    parsed = load("modules/theme/pages/font.adoc")
    assert parsed.title == "Font Category Keys"
    assert parsed.meta["navtitle"] == "Font" and parsed.meta["source-language"] == "yaml"
    assert [(s.headings, s.anchor) for s in parsed.sections] == [
        ((), ""),
        (("font",), "_font"),  # Asciidoctor's auto id: idprefix `_`, idseparator `_`
        (("Extend the font catalog",), "extend-catalog"),  # the explicit [#extend-catalog]
    ]


def test_auto_id_rules() -> None:
    parsed = page("= T\n\n== Font Files\n\n== What's new in 2.0?\n\n== Font Files\n\n"
                  "== The `font` key -- and more\n\n[[custom]]\n=== Custom\n")
    assert [s.anchor for s in parsed.sections[1:]] == [
        "_font_files", "_whats_new_in_2_0", "_font_files_2", "_the_font_key_and_more", "custom"]
    assert [s.headings for s in parsed.sections][-1] == ("The font key -- and more", "Custom")
    custom = page("= T\n:idprefix:\n:idseparator: -\n\n== Font Files\n")
    assert custom.sections[1].anchor == "font-files"


def test_auto_ids_honour_antora_yml_attributes() -> None:
    antora = "name: c\nversion: ~\nasciidoc:\n  attributes:\n    idprefix: ''\n    idseparator: '-'\n"
    files = {"docs/antora.yml": antora}
    text = "= T\n\n== Font Files\n"
    parsed = parse(Source("docs/modules/ROOT/pages/x.adoc", text, {}, files.get))
    assert parsed.sections[1].anchor == "font-files"
    # without antora.yml (not an Antora tree) the Asciidoctor defaults apply
    assert parse(Source("x.adoc", text, {}, lambda rel: None)).sections[1].anchor == "_font_files"


def test_source_blocks_keep_language_and_title() -> None:
    code = [b for b in blocks(load("modules/theme/pages/font.adoc"), "Extend the font catalog") if b.kind == "code"]
    assert [b.language for b in code] == ["yaml", "yaml", "yaml"]
    assert code[0].title == "Redeclaring the bundle fonts in a custom theme"
    assert code[0].text.startswith("```yaml\nextends: default\nfont:\n  catalog:\n    Noto Serif:\n")
    assert code[0].text.endswith("heading:\n  font-family: Your Font\n```")


def test_table_with_asciidoc_cells() -> None:
    table = next(b for b in blocks(load("modules/theme/pages/font.adoc"), "font") if b.kind == "table")
    lines = table.text.split("\n")
    assert lines[:2] == ["| Key | Value Type | Example |", "|---|---|---|"]
    assert lines[3] == "| fallbacks | Array | `font: fallbacks: - M+ 1p Fallback - Noto Emoji` |"


def test_admonition_paragraph_and_xrefs_to_pages() -> None:
    parsed = load("modules/ROOT/pages/autofit-text.adoc")
    caution = next(b for b in blocks(parsed, "autofit option") if b.kind == "admonition")
    assert caution.title == "Caution"
    assert caution.text.startswith("**Caution:** The converter won't shrink the font size beyond the value of "
                                   "the `base-font-size-min` key")
    literal = next(b for b in blocks(parsed, "autofit option") if b.kind == "code")
    assert literal.language == "asciidoc" and "[source%autofit,java]\n----\n@SessionScoped" in literal.text


def test_admonition_block_with_title() -> None:
    parsed = page("= T\n\n[WARNING]\n.Breaking change\n====\nThe old API is *gone*.\n\n* one\n* two\n====\n")
    assert parsed.sections[0].blocks == (
        Block("admonition", "**Warning: Breaking change:** The old API is gone.\n\n- one\n- two",
              title="Warning: Breaking change"),)
    listed = page("= T\n\n[TIP]\n====\n* one\n====\n").sections[0].blocks
    assert listed == (Block("admonition", "**Tip:**\n\n- one", title="Tip"),)


def test_include_of_a_page_region_by_resource_id() -> None:
    parsed = load("modules/ROOT/pages/roles.adoc")
    assert parsed.includes == ("modules/theme/pages/role.adoc",)
    on_text = blocks(parsed, "Use a built-in role", "On text")
    terms = next(b for b in on_text if b.text.startswith("lead:"))
    assert terms.kind == "prose" and "\nbig: The `big` role maps the font size" in terms.text
    assert "text-justify" not in terms.text  # only tag=user-formatting
    important = next(b for b in blocks(parsed, "Use a custom role") if b.title == "Important")
    # xref:theme:custom-role.adoc[] (not in the tree: its name) and xref:theme:role.adoc[] (its title)
    assert important.text == ("**Important:** Before you can use a custom role in your document, you need to "
                              "define it in your theme. See custom-role and Role Category Keys to learn how to "
                              "create a custom role.")


def test_include_of_an_example_into_a_listing() -> None:
    parsed = load("modules/extend/pages/create-converter.adoc")
    assert parsed.includes == ("modules/extend/examples/extended-pdf-converter.rb",
                               "modules/extend/examples/pdf-converter-custom-thematic-break.rb")
    first, second = [b for s in parsed.sections for b in s.blocks if b.kind == "code"]
    assert first.title == "extended-pdf-converter.rb" and first.language == "ruby"
    assert first.text == ("```ruby\nclass ExtendedPDFConverter < (Asciidoctor::Converter.for 'pdf')\n"
                          "  register_for 'pdf'\n\n  # overrides go here\nend\n```")
    assert second.text.startswith("```ruby\n  def convert_thematic_break node\n")  # tag=convert_thematic_break
    assert "register_for" not in second.text and "tag::" not in second.text


def test_include_of_a_partial() -> None:
    parsed = page("= T\n\n== Roles\n\ninclude::partial$built-in-roles.adoc[tag=para-roles]\n"
                  "include::partial$missing.adoc[]\n")
    assert parsed.includes == ("modules/ROOT/partials/built-in-roles.adoc",)
    assert parsed.sections[1].blocks == (Block("prose", "\n".join([
        "text-justify: Aligns the text to the left margin with justification.",
        "text-left: Aligns the text to the left margin (without justification).",
        "text-right: Aligns the text to the right margin.",
        "text-center: Aligns the text to the center of the page."])),)


def test_attributes_from_the_page_and_antora_yml() -> None:
    parsed = page("= T\n:tool: Asciidoctor PDF\n\nUse {tool} {release-line} ({url-project-repo}[repo]), "
                  "not {undefined}, on version {page-component-version}.{empty} Escaped: \\{tool}.\n")
    assert parsed.sections[0].blocks[0].text == (
        "Use Asciidoctor PDF 3.0.x ([repo](https://github.com/asciidoctor/asciidoctor-pdf)), not , "
        "on version 3.0. Escaped: `{tool}`.")


def test_conditionals_lists_and_inline_macros() -> None:
    text = ("= T\n\nifdef::env-site[]\nOn the site.\nendif::[]\nifdef::backend-pdf[]\nIn a PDF.\nendif::[]\n\n"
            ".Steps\n. Install kbd:[Ctrl+T]\n+\n[,console]\n----\n$ gem install x\n----\n. Run it footnote:[Twice.]\n"
            ".. Nested with link:https://example.org[a link]\n* Bullet under it\n\n"
            "See <<_more>> and image:x.png[] and +{raw}+.\n\n== More\n")
    parsed = page(text)
    assert [b.text for b in parsed.sections[0].blocks] == [
        "On the site.",
        "**Steps**\n1. Install Ctrl+T\n  ```console\n  $ gem install x\n  ```\n2. Run it (Twice.)\n"
        "  1. Nested with [a link](https://example.org)\n    - Bullet under it",
        "See More and and {raw}.",
    ]
    assert parsed.sections[0].blocks[1].title == "Steps"


def test_is_antora_non_page() -> None:
    assert is_antora_non_page("modules/ROOT/partials/intro.adoc")
    assert is_antora_non_page("docs/modules/extend/examples/x.rb")
    assert is_antora_non_page("docs/modules/ROOT/attachments/basic-example.adoc")
    assert is_antora_non_page("modules/ROOT/images/a.png")
    assert is_antora_non_page("docs/modules/theme/nav.adoc")
    assert not is_antora_non_page("docs/modules/theme/pages/font.adoc")
    assert not is_antora_non_page("guides/partials/intro.adoc")


def test_residue_check_catches_raw_asciidoc() -> None:
    raw = (FIXTURES / "modules/theme/pages/font.adoc").read_text(encoding="utf-8")
    assert residue(Block("prose", raw + "\nsee xref:a.adoc[] and {x}\n"))


@pytest.mark.shared
def test_every_page_parses_without_asciidoc_residue() -> None:
    files = sorted(PDF_DOCS.glob("modules/*/pages/**/*.adoc"))
    assert len(files) > 80
    read = reader(PDF_DOCS)
    problems, size, started = [], 0, time.perf_counter()
    for path in files:
        rel = path.relative_to(PDF_DOCS).as_posix()
        text = path.read_text(encoding="utf-8")
        size += len(text.encode())
        parsed = parse(Source(rel, text, {}, read))
        assert "error" not in parsed.meta, (rel, parsed.meta)
        assert parsed.title, rel
        problems.extend(f"{rel}: {found}" for s in parsed.sections for b in s.blocks for found in residue(b))
        problems.extend(f"{rel}: heading {h!r}" for s in parsed.sections for h in s.headings if "`" in h or "{" in h)
    elapsed = time.perf_counter() - started
    assert problems == []
    assert elapsed < 1.5 * size / 100_000 + 1, f"{elapsed:.2f}s for {size / 1000:.0f} KB"
