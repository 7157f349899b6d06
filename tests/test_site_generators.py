"""Page links for Middleman (tech-docs-template), Jekyll, VitePress and GitBook: each URL rule the
formats-dev README documents for its real tree, the generator recognised from its own
configuration (and said from which file), and the rules on small trees written here."""
from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest

from rag.documents import AccessRules, read_document
from rag.levels import Level
from rag.site import detect_site, page_url, routing_front_matter, site_for
from rag.site_urls import SiteInfo
from tests.support.settings import SHARED

FORMATS = SHARED / "corpora" / "formats-dev"
needs_formats = pytest.mark.shared  # reads the formats-dev corpora: `make eval`


@needs_formats
@pytest.mark.parametrize("tree, base, layout, rel, expected", [
    ("gds-way", "https://gds-way.digital.cabinet-office.gov.uk", "middleman",
     "source/standards/slo.html.md.erb", "/standards/slo.html"),
    ("gds-way", "https://gds-way.digital.cabinet-office.gov.uk", "middleman",
     "source/manuals/programming-languages/python/python.html.md.erb",
     "/manuals/programming-languages/python/python.html"),
    ("gds-way", "https://gds-way.digital.cabinet-office.gov.uk", "middleman",
     "source/standards/source-code/index.html.md.erb", "/standards/source-code/index.html"),
    ("gds-way", "https://gds-way.digital.cabinet-office.gov.uk", "middleman", "source/index.html.md.erb", "/"),
    ("gds-way", "https://gds-way.digital.cabinet-office.gov.uk", "middleman", "README.md", None),  # no page
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_docs/step-by-step/01-setup.md", "/docs/step-by-step/01-setup/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_docs/installation/macos.md", "/docs/installation/macos/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_tutorials/navigation.md", "/tutorials/navigation/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_posts/2025-01-29-jekyll-4-4-1-released.markdown",
     "/news/2025/01/29/jekyll-4-4-1-released/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_docs/static_files.md", "/docs/static-files/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_docs/community/community.md", "/docs/community/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_docs/index.md", "/docs/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_tutorials/index.md", "/tutorials/home/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "pages/philosophy.md", "/philosophy/"),
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "readme.md", None),  # `exclude:` in _config.yml
    ("jekyll/docs", "https://jekyllrb.com", "jekyll", "_includes/footer.html", None),
    ("vite/docs", "https://vite.dev", "vitepress", "guide/features.md", "/guide/features"),
    ("vite/docs", "https://vite.dev", "vitepress", "guide/index.md", "/guide/"),
    ("vite/docs", "https://vite.dev", "vitepress", "config/server-options.md", "/config/server-options"),
    ("vite/docs", "https://vite.dev", "vitepress", "index.md", "/"),
    ("feast/docs", "https://docs.feast.dev", "gitbook", "README.md", "/"),
    ("feast/docs", "https://docs.feast.dev", "gitbook", "getting-started/quickstart.md", "/getting-started/quickstart"),
    ("feast/docs", "https://docs.feast.dev", "gitbook", "reference/online-stores/redis.md",
     "/reference/online-stores/redis"),
    ("feast/docs", "https://docs.feast.dev", "gitbook", "how-to-guides/customizing-feast/README.md",
     "/how-to-guides/customizing-feast"),
    ("feast/docs", "https://docs.feast.dev", "gitbook", "reference/feature-repository.md", None),  # not in SUMMARY
    ("feast/docs", "https://docs.feast.dev", "gitbook", "SUMMARY.md", None),
])
def test_each_documented_rule_of_the_four_trees(tree: str, base: str, layout: str, rel: str,
                                                expected: str | None) -> None:
    root = FORMATS / tree
    info = site_for("auto", str(root))
    assert info.layout == layout
    url = page_url(info.layout, base, rel, routing_front_matter(root, rel), "setup", info)
    assert url == ("" if expected is None else f"{base}{expected}#setup")


@pytest.mark.parametrize("files, layout, source", [
    ({"config/tech-docs.yml": "host: https://x\n", "source/index.html.md.erb": "# A\n"}, "middleman", "source"),
    ({"config.rb": "activate :sprockets\nset :source, 'pages'\n"}, "middleman", "pages"),
    ({"_config.yml": "title: T\n"}, "jekyll", ""),
    ({".vitepress/config.mts": "export default { srcDir: 'src' }\n"}, "vitepress", "src"),
    ({".gitbook.yaml": "root: ./docs/\n", "docs/SUMMARY.md": "* [A](a.md)\n"}, "gitbook", "docs"),
    ({"SUMMARY.md": "* [A](a.md)\n"}, "gitbook", ""),
    ({"next.config.mjs": "export default { trailingSlash: true }\n", "content/index.md": "# A\n"}, "nextjs", "content"),
    ({"next.config.js": "module.exports = {}\n", "pages/index.md": "# A\n"}, "", ""),  # no content/: not said
])
def test_each_generator_is_recognised_from_its_own_configuration(tmp_path: Path, files: dict[str, str],
                                                                layout: str, source: str) -> None:
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    (tmp_path / ".git").mkdir()
    found = detect_site(tmp_path)
    assert (found.layout, found.source) == (layout, source)


@pytest.mark.parametrize("layout, rel, front, info, expected", [
    ("middleman", "a/b.html.md", {}, SiteInfo("middleman"), "a/b.html"),
    ("middleman", "a/_partial.html.md.erb", {}, SiteInfo("middleman"), None),
    ("middleman", "layouts/core.html.md.erb", {}, SiteInfo("middleman"), None),
    ("jekyll", "guide/setup.md", {}, SiteInfo("jekyll"), "guide/setup.html"),  # Jekyll's default for pages
    ("jekyll", "guide/index.md", {}, SiteInfo("jekyll"), "guide/"),
    ("jekyll", "guide/setup.md", {"permalink": "/start/"}, SiteInfo("jekyll"), "start/"),
    ("jekyll", "_posts/2024-02-03-hello.md", {}, SiteInfo("jekyll", collections=(("posts", ""),)),
     "2024/02/03/hello.html"),
    ("jekyll", "_recipes/soup.md", {}, SiteInfo("jekyll", collections=(("recipes", ""),)), "recipes/soup.html"),
    ("jekyll", "_drafts/soup.md", {}, SiteInfo("jekyll", collections=(("recipes", ""),)), None),  # no output
    ("vitepress", "guide/features.md", {}, SiteInfo("vitepress"), "guide/features.html"),  # without cleanUrls
    ("gitbook", "a/b.md", {}, SiteInfo("gitbook", pages=frozenset({"a/b.md"})), "a/b"),
    ("gitbook", "a/c.md", {}, SiteInfo("gitbook", pages=frozenset({"a/b.md"})), None),
    ("nextjs", "content/a/b.md", {}, SiteInfo("nextjs", source="content", trailing_slash=True), "a/b/"),
    ("nextjs", "content/a/index.md", {}, SiteInfo("nextjs", source="content", trailing_slash=True), "a/"),
    ("nextjs", "content/index.md", {}, SiteInfo("nextjs", source="content", trailing_slash=True), ""),
    ("nextjs", "content/a/b.md", {}, SiteInfo("nextjs", source="content"), "a/b"),
    ("nextjs", "content/_draft.md", {}, SiteInfo("nextjs", source="content"), None),
    ("nextjs", "README.md", {}, SiteInfo("nextjs", source="content"), None),
])
def test_the_rules_on_paths(layout: str, rel: str, front: dict[str, str], info: SiteInfo,
                            expected: str | None) -> None:
    url = page_url(layout, "https://docs.example.com/", rel, front, "", info)
    assert url == ("" if expected is None else "https://docs.example.com/" + expected)


@pytest.mark.parametrize("rel, anchor, info, expected", [
    ("source/x/y.html.md.erb", "setup", SiteInfo(source="source"), "https://docs.example.com/x/y.html#setup"),
    ("x/y.md", "", SiteInfo(), "https://docs.example.com/x/y.html"),  # no anchor: no `#`
    ("guide/Read Me.rst", "a b", SiteInfo(), "https://docs.example.com/guide/Read%20Me.html#a%20b"),
    ("notes.md", "", SiteInfo(source="source"), None),  # outside the source folder
])
def test_the_url_template_states_the_rule_when_no_generator_is_recognised(rel: str, anchor: str, info: SiteInfo,
                                                                           expected: str | None) -> None:
    url = page_url("", "https://docs.example.com/{path}.html#{anchor}", rel, {}, anchor, info)
    assert url == (expected or "")


def test_the_url_template_setting_is_checked_and_wins_over_the_site_url(tmp_path: Path) -> None:
    from foundation.links import site_of
    from tests.support.settings import make_settings

    settings = make_settings(tmp_path, site_url="https://a.example/",
                             site_url_template="https://docs.example.com/{path}.html#{anchor}")
    assert site_of(settings)[0] == "https://docs.example.com/{path}.html#{anchor}"
    for bad in ("https://docs.example.com/page.html", "docs.example.com/{path}", "https://x/{path}{version}"):
        with pytest.raises(ValueError, match="must be an http"):
            make_settings(tmp_path, site_url_template=bad)


@pytest.mark.parametrize("layout, heading, expected", [
    ("vitepress", "server.watch", "server-watch"),
    ("vitepress", "`index.html` and Project Root", "index-html-and-project-root"),
    ("jekyll", "Theme Variables", "theme-variables"),
    ("jekyll", "1. Setup (optional)", "setup-optional"),
    ("middleman", "Publish open source code", "publish-open-source-code"),
    ("middleman", "Tags: names & values", "tags-names-values"),
    ("gitbook", "Set up (optional)", "set-up-optional"),  # GitHub's slug
])
def test_anchors_follow_each_generators_slug_rule_explicit_ids_first(layout: str, heading: str, expected: str):
    from rag.formats import Section
    from rag.formats.anchors import slugify
    from rag.site import site_anchor

    sections = (Section((), "", ()), Section((heading,), slugify(heading), ()), Section(("Other",), "mine", ()),
                Section((heading,), slugify(heading) + "-1", ()))
    assert site_anchor(layout, sections, slugify(heading)) == expected
    assert site_anchor(layout, sections, slugify(heading) + "-1") == expected + "-1"
    assert site_anchor(layout, sections, "mine") == "mine"  # an explicit id as written


HANDBOOKS = SHARED / "eval" / "team-handbooks-dev"


@pytest.mark.shared
def test_auto_says_what_it_found_in_the_two_team_handbooks(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The Next.js handbook (sourcegraph: next.config.mjs, content/**/*.md, trailingSlash) by the
    URL rules its README gives; the plain GitHub Markdown one (basecamp) recognised as nothing, said
    so, and DOCSBOT_SITE_URL_TEMPLATE states its rule."""
    for name in ("sourcegraph", "basecamp"):
        subprocess.run(["git", "clone", "-q", str(HANDBOOKS / f"{name}-handbook.bundle"), str(tmp_path / name)],
                       check=True)
    base = "https://handbook.sourcegraph.com"
    with caplog.at_level(logging.INFO, logger="rag.site"):
        info = site_for("auto", str(tmp_path / "sourcegraph"))
        plain = site_for("auto", str(tmp_path / "basecamp"))
    assert (info.layout, info.config) == ("nextjs", str(tmp_path / "sourcegraph" / "next.config.mjs"))
    assert f"docs site generator: nextjs, recognised from {info.config}" in caplog.text
    rel = "content/departments/engineering/dev/process/pull-requests.md"
    assert page_url(info.layout, base, rel, {}, "how-to-create-a-pr", info) == (
        f"{base}/departments/engineering/dev/process/pull-requests/#how-to-create-a-pr")
    assert page_url(info.layout, base, "content/index.md", {}, "", info) == f"{base}/"
    assert page_url(info.layout, base, "content/handbook/index.md", {}, "", info) == f"{base}/handbook/"
    team = read_document(tmp_path / "sourcegraph", "content/departments/engineering/teams/graph/index.md",
                         AccessRules({}, Level.public), 1_000_000)
    assert "{{" not in team.body and "generator:" not in team.body and team.body.strip()  # unknown tokens removed
    assert plain.layout == "" and "no docs site generator recognised" in caplog.text
    assert page_url("", "https://basecamp.com/handbook/{path}", "how-we-work.md", {}, "", plain) == (
        "https://basecamp.com/handbook/how-we-work")
