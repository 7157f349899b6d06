"""Citations link to the published docs site (DOCSBOT_SITE_URL): each generator's documented URL
rules (rag/site_urls.py), its recognition from the docs tree, on four real trees of formats-dev, the
settings, the Slack and CLI rendering, an index written before the `page_url` column, and one
end-to-end answer whose citation links the site page and still the commit."""
from __future__ import annotations

from pathlib import Path
from typing import get_args

import pyarrow as pa
import pytest

from bot.blocks import answer_message, citation_line
from commands.cli import render_answer
from foundation.settings import Settings
from foundation.wiring import lease_config, open_engine, rag_config
from eval.repos import run_git
from rag import Answer, Citation, Diagnostics, Level, LocalMiniLM
from rag.site import SITE_LAYOUTS, SiteInfo, detect_layout, detect_site, page_url, routing_front_matter
from rag.store import chunk_schema
from rag.store.search import Store
from sync.folder import index_folder
from tests.support.settings import SHARED, make_settings

FORMATS = SHARED / "corpora" / "formats-dev"


# -- each generator's rules ------------------------------------------------------------------------
@pytest.mark.parametrize("rel, info, expected", [
    ("advanced/timeouts.md", SiteInfo("mkdocs"), "advanced/timeouts/"),
    ("index.md", SiteInfo("mkdocs"), ""),
    ("advanced/index.md", SiteInfo("mkdocs"), "advanced/"),
    ("advanced/README.md", SiteInfo("mkdocs"), "advanced/"),
    ("advanced/timeouts.md", SiteInfo("mkdocs", directory_urls=False), "advanced/timeouts.html"),
    ("advanced/index.md", SiteInfo("mkdocs", directory_urls=False), "advanced/index.html"),
    ("docs/advanced/timeouts.md", SiteInfo("mkdocs", source="docs"), "advanced/timeouts/"),
    ("README.txt", SiteInfo("mkdocs"), None),  # not a Markdown page: no page
    ("notes.md", SiteInfo("mkdocs", source="docs"), None),  # outside docs_dir
])
def test_mkdocs(rel: str, info: SiteInfo, expected: str | None) -> None:
    url = page_url("mkdocs", "https://www.python-httpx.org/", rel, {}, "", info)
    assert url == ("" if expected is None else "https://www.python-httpx.org/" + expected)


@pytest.mark.parametrize("rel, front, info, expected", [
    ("intro.md", {}, SiteInfo("docusaurus"), "docs/intro"),
    ("guides/01-getting-started/02-install.mdx", {}, SiteInfo("docusaurus"), "docs/guides/getting-started/install"),
    ("2021-01-01-release.md", {}, SiteInfo("docusaurus"), "docs/2021-01-01-release"),  # a date is no number prefix
    ("guides/index.md", {}, SiteInfo("docusaurus"), "docs/guides/"),
    ("guides/README.md", {}, SiteInfo("docusaurus"), "docs/guides/"),
    ("guides/guides.md", {}, SiteInfo("docusaurus"), "docs/guides/"),  # named like its folder
    ("index.md", {}, SiteInfo("docusaurus"), "docs/"),
    ("guides/install.md", {"id": "setup"}, SiteInfo("docusaurus"), "docs/guides/setup"),
    ("guides/install.md", {"slug": "/start"}, SiteInfo("docusaurus"), "docs/start"),
    ("guides/install.md", {"slug": "start", "id": "ignored"}, SiteInfo("docusaurus"), "docs/guides/start"),
    ("guides/install.md", {"slug": "/"}, SiteInfo("docusaurus"), "docs/"),
    ("guides/install.md", {}, SiteInfo("docusaurus", route_base="/"), "guides/install"),
    ("guides/install.md", {}, SiteInfo("docusaurus", route_base="handbook"), "handbook/guides/install"),
    ("partials/_snippet.mdx", {}, SiteInfo("docusaurus"), None),  # `_` files are not routed
    ("guides/notes.txt", {}, SiteInfo("docusaurus"), None),
])
def test_docusaurus(rel: str, front: dict[str, str], info: SiteInfo, expected: str | None) -> None:
    url = page_url("docusaurus", "https://trpc.io", rel, front, "", info)
    assert url == ("" if expected is None else "https://trpc.io/" + expected)


@pytest.mark.parametrize("layout, rel, expected", [
    ("nextra", "guide/setup.mdx", "guide/setup"),
    ("nextra", "guide/index.mdx", "guide"),
    ("nextra", "index.md", ""),
    ("nextra", "_meta.json", None),
    ("sphinx", "patterns/appfactories.rst", "patterns/appfactories.html"),
    ("sphinx", "index.rst", "index.html"),
    ("sphinx", "tutorial/index.rst", "tutorial/index.html"),
    ("sphinx-dirhtml", "patterns/appfactories.rst", "patterns/appfactories/"),
    ("sphinx-dirhtml", "tutorial/index.rst", "tutorial/"),
    ("sphinx-dirhtml", "index.rst", ""),
    ("hugo", "content/posts/My Post.md", "posts/my-post/"),
    ("hugo", "content/posts/_index.md", "posts/"),
    ("hugo", "content/posts/bundle/index.md", "posts/bundle/"),
    ("hugo", "posts/first.md", "posts/first/"),  # the docs folder is content/ itself
])
def test_nextra_sphinx_and_hugo(layout: str, rel: str, expected: str | None) -> None:
    url = page_url(layout, "https://site.example.com/", rel, {}, "")
    assert url == ("" if expected is None else "https://site.example.com/" + expected)


def test_hugo_front_matter_moves_the_page() -> None:
    info = SiteInfo("hugo", source="content")
    assert page_url("hugo", "https://h.example.com", "content/posts/a.md", {"slug": "b"}, "", info) == \
        "https://h.example.com/posts/b/"
    assert page_url("hugo", "https://h.example.com", "content/posts/a.md", {"url": "/about/us/"}, "", info) == \
        "https://h.example.com/about/us/"
    assert page_url("hugo", "https://h.example.com", "static/a.md", {}, "", info) == ""


def test_antora_pages_modules_components_and_versions() -> None:
    info = SiteInfo("antora", component="pdf-converter", version="3.0")
    root = "https://docs.asciidoctor.org/"
    assert page_url("antora", root, "modules/theme/pages/font.adoc", {}, "", info) == \
        "https://docs.asciidoctor.org/pdf-converter/3.0/theme/font.html"
    assert page_url("antora", root, "modules/ROOT/pages/install.adoc", {}, "", info) == \
        "https://docs.asciidoctor.org/pdf-converter/3.0/install.html"
    assert page_url("antora", root, "modules/ROOT/pages/index.adoc", {}, "", info) == \
        "https://docs.asciidoctor.org/pdf-converter/3.0/index.html"
    # the base URL names the component: it is the component version's root (a renamed `latest`)
    latest = "https://docs.asciidoctor.org/pdf-converter/latest/"
    assert page_url("antora-indexify", latest, "modules/theme/pages/font.adoc", {}, "", info) == latest + "theme/font/"
    assert page_url("antora-indexify", latest, "modules/ROOT/pages/index.adoc", {}, "", info) == latest
    assert page_url("antora", latest, "modules/theme/pages/sub/font.adoc", {}, "", info) == \
        latest + "theme/sub/font.html"
    unversioned = SiteInfo("antora", component="guide")
    assert page_url("antora", root, "modules/ROOT/pages/a.adoc", {}, "", unversioned) == \
        "https://docs.asciidoctor.org/guide/a.html"
    for not_a_page in ("modules/ROOT/partials/x.adoc", "modules/ROOT/nav.adoc", "theming-guide.adoc",
                       "modules/ROOT/examples/a.rb"):
        assert page_url("antora", root, not_a_page, {}, "", info) == ""


def test_anchors_encoding_and_no_base() -> None:
    assert page_url("mkdocs", "https://d.example.com", "a b/c.md", {}, "set-up") == "https://d.example.com/a%20b/c/#set-up"
    assert page_url("sphinx-dirhtml", "https://d.example.com/en/", "x.rst", {}, "sec") == "https://d.example.com/en/x/#sec"
    assert page_url("mkdocs", "", "a.md", {}, "x") == ""
    assert page_url("nosuch", "https://d.example.com", "a.md", {}, "") == ""


# -- the four real trees of formats-dev ------------------------------------------------------------
@pytest.mark.shared
def test_detect_layout_on_the_real_trees() -> None:
    assert detect_layout(FORMATS / "flask" / "docs") == "sphinx"  # dirhtml is not in conf.py (see rag/site_urls.py)
    assert detect_layout(FORMATS / "trpc" / "www" / "docs") == "docusaurus"  # no config copied: sidebar front matter
    assert detect_layout(FORMATS / "httpx" / "docs") == "mkdocs"  # mkdocs.yml one level up
    assert detect_layout(FORMATS / "asciidoctor-pdf" / "docs") == "antora"
    assert detect_site(FORMATS / "asciidoctor-pdf" / "docs") == SiteInfo("antora", component="pdf-converter",
                                                                          version="3.0")
    assert detect_site(FORMATS / "httpx") == SiteInfo("mkdocs", source="docs")  # the repository root indexed


@pytest.mark.shared
def test_real_paths_map_to_their_published_pages() -> None:
    flask = FORMATS / "flask" / "docs"
    assert page_url("sphinx-dirhtml", "https://flask.palletsprojects.com/en/stable/", "patterns/appfactories.rst", {},
                    "", detect_site(flask, "sphinx-dirhtml")) == \
        "https://flask.palletsprojects.com/en/stable/patterns/appfactories/"
    trpc = FORMATS / "trpc" / "www" / "docs"
    site = detect_site(trpc)

    def trpc_page(rel: str, anchor: str = "") -> str:
        return page_url("docusaurus", "https://trpc.io", rel, routing_front_matter(trpc, rel), anchor, site)

    assert routing_front_matter(trpc, "client/react/setup.mdx") == {"slug": "/client/react/setup", "id": "setup"}
    assert trpc_page("client/react/setup.mdx") == "https://trpc.io/docs/client/react/setup"
    assert trpc_page("client/react/setup.mdx", "1-install-dependencies") == \
        "https://trpc.io/docs/client/react/setup#1-install-dependencies"
    assert trpc_page("client/nextjs/app-router/setup.mdx") == "https://trpc.io/docs/client/nextjs/app-router-setup"
    assert trpc_page("main/introduction.mdx") == "https://trpc.io/docs/"  # slug: /
    assert trpc_page("client/links/localLink.mdx") == "https://trpc.io/docs/client/links/localLink"  # id, no slug
    assert trpc_page("test-sub.md") == "https://trpc.io/docs/test"  # id replaces the file name
    assert trpc_page("partials/_import-approuter.mdx") == ""
    httpx = FORMATS / "httpx" / "docs"
    assert page_url("mkdocs", "https://www.python-httpx.org/", "advanced/timeouts.md", {}, "",
                    detect_site(httpx)) == "https://www.python-httpx.org/advanced/timeouts/"
    pdf = FORMATS / "asciidoctor-pdf" / "docs"
    assert page_url("antora-indexify", "https://docs.asciidoctor.org/pdf-converter/latest/",
                    "modules/theme/pages/font.adoc", {}, "", detect_site(pdf)) == \
        "https://docs.asciidoctor.org/pdf-converter/latest/theme/font/"
    assert page_url("antora", "https://docs.asciidoctor.org", "modules/theme/pages/font.adoc", {}, "",
                    detect_site(pdf)) == "https://docs.asciidoctor.org/pdf-converter/3.0/theme/font.html"


# -- recognising a generator from its configuration ------------------------------------------------
def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_configuration_files_are_read_not_run(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the repository root: the search stops here
    write(tmp_path, {"mkdocs.yml": "site_name: X\ndocs_dir: handbook\nuse_directory_urls: false  # html\n",
                     "handbook/a.md": "# A\n"})
    assert detect_site(tmp_path / "handbook") == SiteInfo("mkdocs", directory_urls=False)
    assert detect_site(tmp_path) == SiteInfo("mkdocs", source="handbook", directory_urls=False)

    site = write(tmp_path / "d", {"website/docusaurus.config.ts": """
        export default {
          presets: [['classic', {
            docs: { sidebarPath: './sidebars.ts', routeBasePath: 'guide', path: '../docs' },
            blog: { routeBasePath: 'news' },
          }]],
          themeConfig: { docs: { sidebar: { hideable: true } } },
        };""", "docs/a.md": "# A\n"})
    (site / ".git").mkdir()
    assert detect_site(site / "docs") == SiteInfo("docusaurus", route_base="guide")  # config in website/ beside it
    assert detect_site(site) == SiteInfo("docusaurus", source="docs", route_base="guide")

    sphinx = write(tmp_path / "s", {".readthedocs.yaml": "version: 2\nsphinx:\n  builder: dirhtml\n",
                                    "docs/conf.py": 'project = "X"\n', "docs/index.rst": "X\n=\n"})
    (sphinx / ".git").mkdir()
    assert detect_layout(sphinx / "docs") == "sphinx-dirhtml"
    assert detect_site(sphinx) == SiteInfo("sphinx-dirhtml", source="docs")

    antora = write(tmp_path / "a", {"antora.yml": "name: guide\nversion: ~\n", "antora-playbook.yml":
                                    "urls:\n  html_extension_style: indexify\n", "modules/ROOT/pages/a.adoc": "= A\n"})
    assert detect_site(antora) == SiteInfo("antora-indexify", component="guide")

    hugo = write(tmp_path / "h", {"hugo.toml": 'baseURL = "https://h.example.com/"\ncontentDir = "pages"\n',
                                  "pages/a.md": "# A\n"})
    (hugo / ".git").mkdir()
    assert detect_site(hugo) == SiteInfo("hugo", source="pages")
    assert detect_site(hugo / "pages") == SiteInfo("hugo")

    nextra = write(tmp_path / "n", {"next.config.mjs": "import nextra from 'nextra'\n", "pages/index.mdx": "# A\n"})
    (nextra / ".git").mkdir()
    assert detect_site(nextra) == SiteInfo("nextra", source="pages")

    nothing = write(tmp_path / "plain", {"a.md": "# A\n"})
    (nothing / ".git").mkdir()
    assert detect_layout(nothing) == ""


def test_routing_front_matter_reads_only_the_routing_keys(tmp_path: Path) -> None:
    write(tmp_path, {"a.md": "---\ntitle: A\nslug: '/x'\nid: a-1\n---\n# A\nslug: no\n",
                     "b.md": '+++\nslug = "toml"\n+++\n', "c.md": "# no front matter\nslug: no\n"})
    assert routing_front_matter(tmp_path, "a.md") == {"slug": "/x", "id": "a-1"}
    assert routing_front_matter(tmp_path, "b.md") == {"slug": "toml"}
    assert routing_front_matter(tmp_path, "c.md") == {}
    assert routing_front_matter(tmp_path, "../outside.md") == {}
    assert routing_front_matter(tmp_path, "missing.md") == {}


# -- settings ----------------------------------------------------------------------------------------
def test_the_layout_setting_lists_every_layout() -> None:
    assert get_args(Settings.model_fields["site_layout"].annotation) == SITE_LAYOUTS


def test_the_link_config_carries_the_site(tmp_path: Path) -> None:
    plain = rag_config(make_settings(tmp_path / "i")).links
    assert (plain.site_url, plain.site_layout, plain.site_root) == ("", "auto", "")
    links = rag_config(make_settings(tmp_path / "i", site_url="https://d.example.com", site_layout="hugo",
                                     docs_dir=str(tmp_path / "docs"))).links
    assert (links.site_url, links.site_layout, links.site_root) == ("https://d.example.com", "hugo",
                                                                    str(tmp_path / "docs"))
    synced = rag_config(make_settings(tmp_path / "i", site_url="https://d.example.com", repo="https://g.example.com/r.git",
                                      repo_subdir="docs/", work_dir=str(tmp_path / "w"))).links
    assert synced.site_root == str(tmp_path / "w" / "repo" / "docs")  # the sync's working copy


# -- rendering ----------------------------------------------------------------------------------------
PERMALINK = "https://git.example.com/team/docs/blob/" + "a1b2c3d4" * 5 + "/docs/deploy.md#fridays"
PAGE = "https://docs.example.com/deploy/#fridays"


def cited(page_url: str) -> Citation:
    return Citation(1, "deploy.md", "Deploy", "Fridays", "2.3", "a1b2c3d4" * 5, "2026-10-01T10:00:00Z", PERMALINK,
                    0.9, anchor="fridays", page_url=page_url)


def test_slack_links_the_site_page_and_the_commit() -> None:
    assert citation_line(cited(PAGE)) == \
        f"[1] <{PAGE}|Deploy › Fridays> · v2.3 · <{PERMALINK}|commit a1b2c3d> · 2026-10-01"
    assert citation_line(cited("")) == f"[1] <{PERMALINK}|Deploy › Fridays> · v2.3 · `a1b2c3d` · 2026-10-01"
    answer = Answer("q", "Frozen on Fridays [1].", True, None, [cited(PAGE)], Diagnostics(), "team")
    sources = answer_message(answer, "A1")["blocks"][1]["text"]["text"]
    assert f"<{PAGE}|Deploy › Fridays>" in sources and f"<{PERMALINK}|commit a1b2c3d>" in sources


def test_the_cli_prints_the_site_page_then_the_commit() -> None:
    answer = Answer("q", "Frozen on Fridays [1].", True, None, [cited(PAGE)], Diagnostics(), "team")
    assert render_answer(answer.to_json()).splitlines()[1] == \
        f"  [1] Deploy › Fridays · deploy.md · v2.3 · a1b2c3d · 2026-10-01 · {PAGE} · commit {PERMALINK}"
    answer.citations = [cited("")]
    assert render_answer(answer.to_json()).splitlines()[1].endswith(f"2026-10-01 · {PERMALINK}")


# -- an index written before the page_url column --------------------------------------------------
async def test_an_index_without_page_urls_is_read_and_migrated_by_its_next_write(tmp_path: Path) -> None:
    schema = chunk_schema(4)
    full = pa.Table.from_pylist([{
        **{f.name: "" for f in schema if pa.types.is_string(f.type)}, "chunk_id": "c1", "doc_path": "a.md",
        "ordinal": 0, "access_rank": 0, "page_url": "https://d.example.com/a/", "vector": [0.5, 0.5, 0.5, 0.5],
    }], schema=schema)
    store = Store(str(tmp_path / "index"), refresh_s=0)
    store.write(full.drop_columns(["page_url"]), None)  # as an earlier version wrote it
    assert (await store.rows(["c1"]))["c1"]["page_url"] == ""
    assert (await store.doc_rows("a.md", 0))[0]["page_url"] == ""
    store.write(full, None)
    assert (await store.rows(["c1"]))["c1"]["page_url"] == "https://d.example.com/a/"


# -- end to end ---------------------------------------------------------------------------------------
async def test_an_answer_cites_the_site_page_with_its_section_and_the_commit(
    tmp_path: Path, embedder: LocalMiniLM,
) -> None:
    repo = write(tmp_path / "repo", {
        "mkdocs.yml": "site_name: Team docs\n",
        "docs/index.md": "# Team docs\n\nWelcome.\n",
        "docs/advanced/timeouts.md": "---\naccess: public\n---\n# Timeouts\n\nIntro to timeouts.\n\n"
                                     "## Read timeout\n\nThe read timeout of the payments client is 45 seconds; "
                                     "raise it with PAYMENTS_READ_TIMEOUT.\n",
    })
    run_git(repo, "init", "-q")
    run_git(repo, "add", "-A")
    run_git(repo, "commit", "-qm", "docs")
    commit = run_git(repo, "rev-parse", "HEAD")
    settings = make_settings(tmp_path / "index", docs_dir=str(repo / "docs"), repo_subdir="docs",
                             default_level="public", repo_web="https://git.example.com/team/docs",
                             site_url="https://docs.example.com/")
    engine = open_engine(settings)
    engine.embedder = embedder
    index_folder(engine, lease_config(settings), repo / "docs")
    answer = await engine.ask("What is the read timeout of the payments client?", Level.public)
    assert answer.answered, answer.detail
    c = next(c for c in answer.citations if c.doc_path == "advanced/timeouts.md")
    assert c.anchor, "the section has an anchor"
    assert c.page_url == f"https://docs.example.com/advanced/timeouts/#{c.anchor}"
    assert c.url == f"https://git.example.com/team/docs/blob/{commit}/docs/advanced/timeouts.md#{c.anchor}"
    assert f"<{c.page_url}|" in citation_line(c) and f"<{c.url}|commit {commit[:7]}>" in citation_line(c)
