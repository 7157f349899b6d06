"""Middleman (tech-docs-template ERB), Jekyll (Liquid, kramdown attribute lines), VitePress and
GitBook pages into the document model (rag/formats/erb.py, liquid.py, vitepress.py), on small
trees written here and on the four real trees of ../shared/corpora/formats-dev."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.documents import Document, load_folder, read_document
from rag.formats import default_include
from tests.test_formats_markdown import _CODE_SPAN, _FENCED, _RESIDUE, CORPORA, RULES


def page(tmp_path: Path, rel: str, source: str, **others: str) -> Document:
    for name, text in {rel: source, **others}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return read_document(tmp_path, rel, RULES, 1_000_000)


def blocks(doc: Document) -> list[str]:
    return [block.text for s in doc.sections for block in s.blocks]


def test_a_tech_docs_page_takes_its_title_from_front_matter_and_drops_its_ruby(tmp_path: Path):
    doc = page(tmp_path, "source/standards/slo.html.md.erb",
               "---\ntitle: Service level objectives\n---\n<%= partial 'partials/site-banner' %>\n\n"
               "# <%= current_page.data.title %>\n\nIntro [SLOs][slo] text.\n\n"
               "<% content_for :sidebar do %>\n<ul><li>Nav only</li></ul>\n<% end %>\n\n"
               "## Set targets\n\n<%= warning_text('Do not page on SLIs.') %>\n\n"
               "<ul>\n<% sitemap.resources.each do |r| %>\n<li><%= r.url %></li>\n<% end %>\n</ul>\n\n"
               "<% if true %>Kept <%= Time.current.year %> text.<% end %>\n\n"
               "<%= partial 'partials/missing' %>\n\n[slo]: https://sre.google/slo\n",
               **{"source/partials/_site-banner.html.erb": "<div><p><strong>For GDS only.</strong></p></div>\n"})
    assert doc.format == "middleman" and doc.title == "Service level objectives"
    assert [s.headings for s in doc.sections] == [(), (), ("Set targets",)]
    assert blocks(doc) == ["For GDS only.", "Intro [SLOs](https://sre.google/slo) text.",
                           "**Warning:** Do not page on SLIs.", "Kept  text."]
    assert doc.includes == ("source/partials/_site-banner.html.erb",)


def test_only_md_erb_files_are_middleman_pages(tmp_path: Path):
    for rel in ("source/a.html.md.erb", "source/partials/_nav.html.erb", "source/layouts/core.erb",
                "source/_hidden.html.md.erb"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# A\n\ntext\n")
    docs, skipped = load_folder(tmp_path, default_include(), [], RULES, 1_000_000)
    assert [d.path for d in docs] == ["source/a.html.md.erb"] and skipped == []


def test_jekyll_liquid_shows_what_the_site_renders(tmp_path: Path):
    doc = page(tmp_path, "_docs/themes.md",
               "---\ntitle: Themes\n---\nSee [the repo]({{ site.repository }}/issues/1) and "
               "[Sass]({{ '/docs/sass/' | relative_url }}) or [x]({% link _docs/x.md %}).\n\n"
               "## Theme Variables {%- include docs_version_badge.html version=\"4.3.0\" -%}\n"
               "{: #theme-vars}\n\n{: .note .warning}\nMind the\ngap.\n\n"
               "{% raw %}Write `{{ page.title }}` as is.{% endraw %}\n\n"
               "{% include note.html content=\"Included note.\" %}\n\n"
               "{% for s in site.data.options %}<td>{{ s.name }}</td>{% endfor %}\n\n"
               "{% highlight ruby %}\nputs 1\n{% endhighlight %}\n\n"
               "```liquid\n{% raw %}\n{{ page.title }}\n{% endraw %}\n```\n\n"
               "[Open](http://localhost:4000){:target=\"_blank\"} {{ unknown.thing }}{% if x %}done{% endif %}\n",
               **{"_config.yml": "repository: https://github.com/jekyll/jekyll\n",
                  "_includes/note.html": "<p>{{ include.content }}</p>\n"})
    assert [(s.headings, s.anchor) for s in doc.sections] == [((), ""), (("Theme Variables",), "theme-vars")]
    assert blocks(doc) == [
        "See [the repo](https://github.com/jekyll/jekyll/issues/1) and [Sass](/docs/sass/) or [x](_docs/x.md).",
        "**Warning:** Mind the\ngap.", "Write `{{ page.title }}` as is.", "Included note.",
        "```ruby\nputs 1\n```", "```liquid\n{{ page.title }}\n```", "[Open](http://localhost:4000) done"]


def test_gitbook_blocks_become_admonitions_tabs_and_plain_links(tmp_path: Path):
    doc = page(tmp_path, "docs/how-to/run.md",
               "# Run\n\n{% hint style=\"warning\" %}\nBack up `feature\\_store.yaml` first.\n{% endhint %}\n\n"
               "{% tabs %}\n{% tab title=\"Python\" %}\n{% code title=\"run.py\" %}\n```python\nrun()\n```\n"
               "{% endcode %}\n{% endtab %}\n{% endtabs %}\n\n"
               "{% content-ref url=\"setup.md\" %}\n[setup.md](setup.md)\n{% endcontent-ref %}\n\n"
               "{% embed url=\"https://youtu.be/x\" %}\n")
    assert blocks(doc) == ["**Warning:** Back up `feature\\_store.yaml` first.", "**Python:**",
                           "```python\nrun()\n```", "[setup.md](setup.md)"]


def test_vitepress_snippets_markers_and_vue_leave_only_text(tmp_path: Path):
    doc = page(tmp_path, "guide/deploy.md",
               "<script setup>\nimport X from './x.vue'\n</script>\n\n# Deploy <Badge text=\"new\" />\n\n"
               "::: tip NOTE\nOuter\n:::: details More\nInner {{ count }}\n::::\n:::\n\n"
               "<<< ./deploy.yaml#content [.github/deploy.yml]\n\n"
               "```js [vite.config.js]\nconst a = 1 // [!code ++]\n```\n",
               **{"guide/deploy.yaml": "# head\n#region content\nname: Deploy\n#endregion content\ntail: 1\n"})
    assert doc.title == "Deploy"
    assert blocks(doc) == ["**Tip: NOTE:** Outer\n\n**Details: More:** Inner", "```yaml\nname: Deploy\n```",
                           "```js\nconst a = 1\n```"]
    assert doc.includes == ("guide/deploy.yaml",)


_NEW_RESIDUE = {
    **{name: pattern for name, pattern in _RESIDUE.items() if name != "an admonition marker"},
    "an admonition marker": re.compile(r"(?<!s3):::|^[ \t]*!!!", re.M),  # `arn:aws:s3:::b` is an ARN, `Yay!!!` prose
    "a Liquid tag": re.compile(r"\{%|%\}"),
    "a Liquid output": re.compile(r"\{\{|\}\}"),
    "an ERB tag": re.compile(r"<%|%>"),
    "a GitHub alert": re.compile(r"\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]"),
    "a kramdown attribute list": re.compile(r"\{:"),
    "a snippet import": re.compile(r"^[ \t]*<<<", re.M),
}


@pytest.mark.shared
@pytest.mark.parametrize("folder", ["gds-way", "jekyll/docs", "vite/docs", "feast/docs"])
def test_no_block_or_heading_of_the_new_generators_trees_holds_markup_residue(folder: str):
    docs, skipped = load_folder(CORPORA / folder, default_include(), [], RULES, 2_000_000)
    # Every page is indexed or skipped with its reason: here, pages with no text yet ('# TO WRITE').
    assert {reason.split(" (")[0] for path, reason in skipped if not path.startswith(".")} <= {"no text to index"}
    assert len(docs) > 50
    found = []
    for doc in docs:
        for part in [s.headings[-1] for s in doc.sections if s.headings] + [
                b.text for s in doc.sections for b in s.blocks if b.kind != "code"]:
            prose = _CODE_SPAN.sub("", _FENCED.sub("", part))
            found += [f"{doc.path}: {name}: {prose[max(0, m.start() - 30):m.end() + 30]!r}"
                      for name, pattern in _NEW_RESIDUE.items() if name != "fence meta"
                      for m in pattern.finditer(prose)]
    assert found == []


def test_a_page_that_is_mostly_a_loop_over_data_is_skipped_with_a_reason_naming_it(tmp_path: Path):
    (tmp_path / "team.md").write_text("---\ntitle: Team\n---\n# Team\n\n{% for p in site.data.people %}\n"
                                      + "<tr><td>{{ p.name }}</td><td>{{ p.role }}</td><td>{{ p.bio }}</td></tr>\n" * 8
                                      + "{% endfor %}\n")
    (tmp_path / "talks.md").write_text("# Talks\n\nOur talks, every year.\n\n## Featured\n\n**{{ featured.topic }}** "
                                       "- [*{{ featured.speaker }}*](https://x.example/{{ t }})\n")
    docs, skipped = load_folder(tmp_path, ["**/*.md"], [], RULES, 1_000_000)
    assert [(path, reason.split(":")[0]) for path, reason in skipped] == [("team.md", "mostly template")]
    assert "loop over site data is 99% of the page and 5 characters are left" in skipped[0][1]
    assert [d.body for d in docs] == ["Our talks, every year.\n\n## Featured"]  # a line of output tags only: nothing


def test_a_gitbook_pages_title_is_its_summary_entry_not_its_h1(tmp_path: Path):
    files = {".gitbook.yaml": "root: ./docs/\n",
             "docs/SUMMARY.md": "# Table of contents\n\n* [Introduction](README.md)\n"
                                "* [Community & getting help](community.md)\n## Guides\n\n"
                                "* [Data types](guides/feast\\_types.md)\n  * [Site](https://x.example/a.md)\n",
             "docs/README.md": "# Feast\n\nFeast is a feature store.\n",
             "docs/community.md": "# Community\n\nAsk in Slack.\n",
             "docs/guides/feast_types.md": "# Feast types\n\nTypes of features.\n",
             "docs/guides/other.md": "# Other page\n\nNot in the table of contents.\n"}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    docs, _ = load_folder(tmp_path, ["**/*.md"], ["docs/SUMMARY.md"], RULES, 1_000_000)
    assert {d.path: d.title for d in docs} == {
        "docs/README.md": "Introduction", "docs/community.md": "Community & getting help",
        "docs/guides/feast_types.md": "Data types", "docs/guides/other.md": "Other page"}
    # the H1 that differs from the title stays the page's first heading; the docs folder as the root reads it too
    assert read_document(tmp_path / "docs", "community.md", RULES, 1_000_000).title == "Community & getting help"
    community = next(d for d in docs if d.path == "docs/community.md")
    assert [s.headings for s in community.sections if s.headings] == [("Community",)]
