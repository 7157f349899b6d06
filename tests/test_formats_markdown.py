"""The Markdown family of formats (rag/formats/markdown.py, mdx.py and the MkDocs Material,
Docusaurus and Hugo dialects) into the shared document model, and chunking over it.

Fixtures under tests/fixtures/formats/ are excerpts of ../shared/corpora/formats-dev (see its
README): trpc/ of trpc/www/docs (Docusaurus MDX, MIT), httpx/ of httpx/docs (MkDocs Material,
BSD-3-Clause), copied as they are, except: trpc/community/contributing.mdx has its `title:` line
removed (a page named by its sidebar label), trpc/main/quickstart.mdx keeps the front matter,
imports and the first two tabs of "3. Using input parser ...", and httpx/advanced/proxies.md has a
`--8<-- "snippets/proxy-variables.md"` line added, the snippet being an excerpt of
environment_variables.md.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.chunking import chunk_document
from rag.documents import AccessRules, Document, DocumentError, load_folder, parse_document, read_document
from rag.formats import Format, Section, default_include, format_for, suffixes
from rag.levels import Level
from tests.support.settings import SHARED

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "formats"
CORPORA = SHARED / "corpora" / "formats-dev"
RULES = AccessRules({}, Level.public)


def fixture(corpus: str, rel: str) -> Document:
    return read_document(FIXTURES / corpus, rel, RULES, 1_000_000)


def text(source: str, path: str = "page.md") -> Document:
    return parse_document(path, source.encode(), RULES, 1_000_000)


def section(doc: Document, *headings: str) -> Section:
    return next(s for s in doc.sections if s.headings == headings)


def section_text(doc: Document, *headings: str) -> str:
    return "\n\n".join(block.text for block in section(doc, *headings).blocks)


def test_the_registry_reads_every_markdown_suffix_and_lists_all_eight_in_the_default_include():
    assert default_include() == ("**/*.md", "**/*.markdown", "**/*.mdx", "**/*.rst", "**/*.adoc", "**/*.asciidoc",
                                 "**/*.erb", "**/*.txt")
    assert set(suffixes()) == {".md", ".markdown", ".mdx", ".rst", ".adoc", ".asciidoc", ".erb", ".txt"}
    assert [format_for(p).name for p in ("a/b.md", "B.MARKDOWN", "x.mdx", "notes.txt")] == [
        "markdown", "markdown", "mdx", "text", ]
    assert format_for("Makefile").name == format_for("app.conf").name == "text"  # no markup guessed


def test_title_from_front_matter_then_sidebar_label_then_first_h1_then_file_name():
    assert fixture("trpc", "client/react/setup.mdx").title == "Set up the React Query Integration"
    # sidebar_label only; an import of a partial and no text of its own, which read_document skips
    contributing = FIXTURES / "trpc" / "community" / "contributing.mdx"
    assert text(contributing.read_text(), "community/contributing.mdx").title == "Contributing"
    api = fixture("httpx", "api.md")
    assert api.title == "Developer Interface"
    assert fixture("httpx", "advanced/clients.md").title == "clients"
    assert text("Intro.\n\nSetext Title\n============\n\nBody.\n").title == "Setext Title"


def test_heading_paths_leave_out_the_h1_that_is_the_title_and_anchors_follow_github():
    api = fixture("httpx", "api.md")
    assert [(s.headings, s.anchor) for s in api.sections] == [
        ((), ""), ((), "developer-interface"), (("Helper Functions",), "helper-functions")]
    setup = fixture("trpc", "client/react/setup.mdx")
    assert [(s.headings, s.anchor) for s in setup.sections[1:]] == [
        (("1. Install dependencies",), "1-install-dependencies"),
        (("2. Import your `AppRouter`",), "2-import-your-approuter"),
        (("3. Create tRPC hooks",), "3-create-trpc-hooks"),
    ]
    nested = text("# Runbook\n\n## Steps\n\n### Verify\n\ncheck\n\n## Steps\n\nagain\n\n## ???\n\nodd\n")
    assert [(s.headings, s.anchor) for s in nested.sections[1:]] == [
        ((), "runbook"), (("Steps",), "steps"), (("Steps", "Verify"), "verify"), (("Steps",), "steps-1"),
        (("???",), "-1")]


def test_explicit_heading_ids_are_the_anchor_and_never_shown():
    procedures = fixture("trpc", "server/procedures.md")
    base = section(procedures, 'Reusable "Base Procedures"')
    assert base.anchor == "reusable-base-procedures"
    written = text("## Proxy mechanisms { #mechanisms .advanced }\n\nx\n\n## FORWARD vs TUNNEL [#forward]\n\ny\n\n"
                   "## Use the {proxy} option\n\nz\n")
    assert [(s.headings, s.anchor) for s in written.sections[1:]] == [
        (("Proxy mechanisms",), "mechanisms"), (("FORWARD vs TUNNEL",), "forward"),
        (("Use the {proxy} option",), "use-the-proxy-option")]
    assert all("#" not in c.text and "#" not in c.section for c in chunk_document(written, 1000, 150))


def test_a_code_block_is_kept_whole_with_its_language_and_no_fence_meta():
    setup = fixture("trpc", "client/react/setup.mdx")
    code = next(b for b in section(setup, "3. Create tRPC hooks").blocks if b.kind == "code")
    assert (code.language, code.title) == ("ts", "utils/trpc.ts")
    assert code.text == ("```ts\nimport { createTRPCReact } from '@trpc/react-query';\n"
                         "import type { AppRouter } from '../server/router';\n\n"
                         "export const trpc = createTRPCReact<AppRouter>();\n```")  # twoslash's hidden lines gone
    chunk = next(c for c in chunk_document(setup, 1000, 150) if c.anchor == "3-create-trpc-hooks")
    assert code.text in chunk.text
    metas = text('```jsx {6}\nconst a = 1;\n```\n\n```tsx filename="app/layout.tsx" copy\nexport {};\n```\n\n'
                 "```{6}\nplain\n```\n\n    indented code\n")
    blocks = metas.sections[0].blocks
    assert [(b.kind, b.language, b.title) for b in blocks] == [
        ("code", "jsx", ""), ("code", "tsx", ""), ("code", "", ""), ("code", "", "")]
    assert [b.text.split("\n")[0] for b in blocks] == ["```jsx", "```tsx", "```", "```"]


def test_admonitions_keep_their_text_mkdocs_and_docusaurus():
    clients = fixture("httpx", "advanced/clients.md")
    hint, = clients.sections[0].blocks
    assert (hint.kind, hint.title) == ("admonition", "Hint")
    assert hint.text.startswith("**Hint:** If you are coming from Requests, `httpx.Client()` is what you can use")
    tldr = section(clients, "Why use a Client?").blocks[0]
    assert (tldr.kind, tldr.title) == ("admonition", "Note: TL;DR")
    assert "you should use a `Client` instance." in tldr.text
    setup = fixture("trpc", "client/react/setup.mdx")
    tip = next(b for b in section(setup, "1. Install dependencies").blocks if b.kind == "admonition")
    assert tip.title == "Tip: AI Agents"
    assert ("install tRPC skills for better code generation:\n\n```bash\nnpx @tanstack/intent@latest install\n```"
            in tip.text)
    api = fixture("httpx", "api.md")  # mkautodoc's `::: httpx.request`: the object's name, no marker
    assert "`httpx.request`" in section_text(api, "Helper Functions")
    chunks = [c.text for doc in (clients, setup, api) for c in chunk_document(doc, 1000, 150)]
    assert not any(":::" in c or "!!!" in c for c in chunks)


def test_jsx_tags_and_esm_lines_are_dropped_and_their_children_kept():
    setup = fixture("trpc", "client/react/setup.mdx")
    whole = "\n".join(c.text for c in chunk_document(setup, 1000, 150))
    assert "import TabItem" not in whole and "InstallSnippet" not in whole and "<ImportAppRouter" not in whole
    assert section_text(setup, "1. Install dependencies").startswith("The following dependencies should be installed.")
    quickstart = fixture("trpc", "main/quickstart.mdx")
    tabs = section_text(quickstart, "3. Using input parser to validate procedure inputs")
    assert "**Vanilla:**\n\nThe input parser should be a function that validates and casts the input" in tabs
    assert "**Zod:**\n\nThe input parser can be any `ZodType`, e.g. `z.string()` or `z.object({})`." in tabs
    assert "<" not in tabs.split("```")[0] and "TabItem" not in tabs
    comment = text("Before {/* a note to editors */} after.\n\n```jsx\n{/* Your app here */}\n```\n", "x.mdx")
    assert [b.text for b in comment.sections[0].blocks] == ["Before  after.", "```jsx\n{/* Your app here */}\n```"]
    hugo = text('+++\ntitle = "Hugo page"\n+++\n{{< note >}}\nKeep **this**.\n{{< /note >}}\n\n'
                '{{< highlight go "linenos=table" >}}\nfmt.Println(1)\n{{< /highlight >}}\n')
    assert [(b.kind, b.text) for b in hugo.sections[0].blocks] == [
        ("prose", "Keep **this**."), ("code", "```go\nfmt.Println(1)\n```")]


def test_a_docusaurus_partial_is_put_where_its_component_is_and_listed_as_an_include():
    setup = fixture("trpc", "client/react/setup.mdx")
    assert setup.includes == ("partials/_import-approuter.mdx",)
    imported = section_text(setup, "2. Import your `AppRouter`")
    assert imported.startswith("Import your `AppRouter` type into the client application.")
    assert "**Tip:** By using `import type` you ensure" in imported


def test_a_snippet_is_resolved_inside_the_docs_root_and_listed_as_an_include(tmp_path: Path):
    proxies = fixture("httpx", "advanced/proxies.md")
    assert proxies.includes == ("snippets/proxy-variables.md",)
    assert "`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY` set the proxy to be used" in section_text(
        proxies, "`HTTP_PROXY`, `HTTPS_PROXY`, `ALL_PROXY`")
    raw = (FIXTURES / "httpx" / "advanced" / "proxies.md").read_bytes()
    alone = parse_document("advanced/proxies.md", raw, RULES, 1_000_000)  # no docs root: no includes
    assert alone.includes == () and "--8<--" not in alone.body and "HTTP_PROXY" not in alone.body
    for rel in ("advanced/proxies.md", "snippets/proxy-variables.md"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes((FIXTURES / "httpx" / rel).read_bytes())
    before = read_document(tmp_path, "advanced/proxies.md", RULES, 1_000_000).content_hash
    (tmp_path / "snippets/proxy-variables.md").write_text("Changed.\n")
    assert read_document(tmp_path, "advanced/proxies.md", RULES, 1_000_000).content_hash != before
    escape = parse_document("a/b.md", b'--8<-- "../../etc/passwd"\n\ntext\n', RULES, 1_000_000,
                            read=lambda rel: pytest.fail(f"read {rel}"))
    assert escape.includes == () and escape.body == "text"


def test_lists_tables_quotes_and_reference_links_are_normalised_markdown():
    doc = text("* one\n* two\n    * nested [docs][ref]\n\n1. first\n\n   more about it\n\n   ```sh\n   run\n   ```\n"
               "2. second\n\n  | a  | b |\n  |:---|--:|\n  | x \\| y | [**z**][Ref] |\n\na | b\n--|--\n1 | `2`\n\n"
               "> quoted\n> line\n\n> [!WARNING]\n> Careful.\n\n<p>Kept <b>text</b></p>\n\n"
               "[ref]: https://example.org/docs\n")
    assert [(b.kind, b.text) for b in doc.sections[0].blocks] == [
        ("list", "- one\n- two\n  - nested [docs](https://example.org/docs)"),
        ("list", "1. first\n\n   more about it\n\n   ```sh\n   run\n   ```\n2. second"),
        ("table", "| a  | b |\n|:---|--:|\n| x \\| y | [**z**](https://example.org/docs) |"),  # as written
        ("table", "| a | b |\n|---|---|\n| 1 | `2` |"),  # rows without their pipes: rendered
        ("prose", "> quoted\n> line"),
        ("admonition", "**Warning:** Careful."),
        ("prose", "Kept text"),
    ]


def test_plain_text_is_one_preamble_of_paragraphs():
    doc = text("# not a heading\nsecond line\n\n\n- not a list either\n", "notes/today.txt")
    assert doc.format == "text" and doc.title == "today"
    assert [(s.headings, [b.text for b in s.blocks]) for s in doc.sections] == [
        ((), ["# not a heading\nsecond line", "- not a list either"])]


def test_a_parser_that_fails_skips_the_file_with_a_short_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    def broken(source: object) -> object:
        raise RecursionError("deep inside the parser")

    monkeypatch.setattr("rag.documents.format_for", lambda path: Format("markdown", (".md",), broken))
    (tmp_path / "a.md").write_text("# A\n")
    docs, skipped = load_folder(tmp_path, ["**/*.md"], [], RULES, 1_000_000)
    assert docs == [] and skipped == [("a.md", "cannot be parsed as markdown (RecursionError)")]
    with pytest.raises(DocumentError, match="cannot be parsed"):
        text("# A\n")


_RESIDUE = {
    "an import line": re.compile(r"^import\s", re.M),
    "an export line": re.compile(r"^export\s", re.M),
    "a JSX tag": re.compile(r"<[A-Z][A-Za-z]*[\s/>]"),
    "an [#id]": re.compile(r"\[#[^\]]*\](?!\()"),  # `[#1006](url)` is a link to an issue
    "an {#id}": re.compile(r"\{#"),
    "fence meta": re.compile(r"^[ \t]*`{3,}[\w+-]*[ \t]+\S|filename=", re.M),
    "an admonition marker": re.compile(r":::|!!!"),
    "a shortcode": re.compile(r"\{\{[<%]"),
}
_FENCED = re.compile(r"^[ \t]*(`{3,}).*?^[ \t]*\1[ \t]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(`+)[^`].*?\1", re.S)


def _outside_code(doc: Document, chunk_text: str, anchor: str) -> str:
    """A chunk's text without its code: the lines of the section's code blocks (a chunk may hold a
    piece of one) and code spans; code keeps `import` lines and JSX as written."""
    blocks = next(s for s in doc.sections if s.anchor == anchor).blocks
    code = {line.strip() for block in blocks for fenced in _FENCED.finditer(block.text)
            for line in fenced.group(0).split("\n")[1:-1]}
    kept = "\n".join(line for line in chunk_text.split("\n") if line.strip() not in code)
    return kept


@pytest.mark.shared
@pytest.mark.parametrize("folder", ["trpc/www/docs", "httpx/docs"])
def test_no_chunk_of_the_formats_dev_corpora_holds_markup_residue(folder: str):
    docs, skipped = load_folder(CORPORA / folder, ["**/*.md", "**/*.mdx"], [], RULES, 2_000_000)
    # Every page is indexed or skipped with its reason: here, pages that only import a partial.
    assert {reason.split(" (")[0] for _, reason in skipped} <= {"no text to index"} and len(docs) > 20
    found = []
    for doc in docs:
        for chunk in chunk_document(doc, 1000, 150):
            prose = _outside_code(doc, chunk.text, chunk.anchor)
            for name, pattern in _RESIDUE.items():
                target = prose if name == "fence meta" else _CODE_SPAN.sub("", prose)
                found += [f"{doc.path}: {name}: {m.group(0)!r}" for m in pattern.finditer(target)]
            found += [f"{doc.path}: {name} in a heading" for name, pattern in _RESIDUE.items()
                      if pattern.search(_CODE_SPAN.sub("", chunk.heading_path))]
    assert found == []


def test_markup_left_open_costs_no_more_than_a_scan():
    """Unclosed tags, quotes, comments and shortcodes in a large file: parsed in well under the
    time a sync can wait (each would cost a scan to the end of the text per occurrence if the
    patterns backtracked across it)."""
    import time

    nasty = ('<div a="x ' * 2000 + "\n" + '<Foo bar={ ' * 2000 + "\n" + "{/* " * 2000 + "\n" + "{{< x " * 2000
             + "\n" + "## T {#a " * 2000 + "\n" + ":::tip " * 2000 + "\n")
    started = time.perf_counter()
    for path in ("big.md", "big.mdx"):
        chunk_document(text(nasty * 10, path), 1000, 150)
    assert time.perf_counter() - started < 5


def test_an_anchor_written_in_a_paragraph_never_shows_and_a_headings_id_stays_its_anchor():
    doc = text("# Handbook\n\n## Fiscal year {#fy}\n\nIt starts February 1. {#fiscal-year} Plan for it.\n\n"
               "- Keep notes in the doc. {#notes-doc}\n- `{#kept}` in code\n")
    [section] = [s for s in doc.sections if s.headings]
    assert (section.headings, section.anchor) == (("Fiscal year",), "fy")
    assert [b.text for b in section.blocks] == ["It starts February 1. Plan for it.",
                                                "- Keep notes in the doc.\n- `{#kept}` in code"]
