"""`doctor`'s site-links check (commands/doctor_site.py) on a Middleman tech-docs tree: the layouts
that give impossible paths are warnings naming the fix, and against a built-site stand-in served
over local HTTP the pages that answer 404 are reported."""
from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from commands.doctor_files import unindexed_checks
from commands.doctor_site import site_checks
from tests.support.settings import make_settings

PAGES = ("standards/slo", "standards/logging", "manuals/aws-tagging", "manuals/licensing", "manuals/gone")


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "gds"
    (root / "config").mkdir(parents=True)
    (root / "config" / "tech-docs.yml").write_text("host: https://gds-way.example\n")
    for page in PAGES:
        (root / "source" / page).parent.mkdir(parents=True, exist_ok=True)
        (root / "source" / f"{page}.html.md.erb").write_text(
            f"---\ntitle: {page}\n---\n# <%= current_page.data.title %>\n\nText.\n")
    (root / ".git").mkdir()
    return root


@pytest.fixture
def site(tmp_path: Path) -> Iterator[str]:
    """The built site: every page but manuals/gone.html, as Middleman writes them."""
    built = tmp_path / "build"
    for page in PAGES[:-1]:
        (built / page).parent.mkdir(parents=True, exist_ok=True)
        (built / f"{page}.html").write_text("<html>page</html>")
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(built))
    handler.log_message = lambda *args: None  # type: ignore[attr-defined]
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


def test_the_pages_of_the_built_site_that_answer_404_are_reported(tmp_path: Path, site: str):
    settings = make_settings(tmp_path / "data", docs_dir=str(tree(tmp_path)), site_url=site)
    [finding] = site_checks(settings)
    assert finding.status == "warning"
    assert "5 of 5 documents link to middleman pages (recognised from" in finding.detail
    assert f"1 of 5 pages opened did not answer: {site}manuals/gone.html (404)" in finding.detail


def test_every_page_of_the_built_site_opens(tmp_path: Path, site: str):
    root = tree(tmp_path)
    (root / "source" / "manuals" / "gone.html.md.erb").unlink()
    [finding] = site_checks(make_settings(tmp_path / "data", docs_dir=str(root), site_url=site))
    assert finding.status == "ok" and finding.detail.endswith("4 of them opened")


@pytest.mark.parametrize("layout, shown", [
    ("sphinx", "source/manuals/aws-tagging.html.md.html"),  # the source folder and extensions kept
    ("sphinx-dirhtml", "source/manuals/aws-tagging.html.md/"),
])
def test_a_layout_that_gives_impossible_paths_is_a_warning_naming_the_fix(tmp_path: Path, layout: str, shown: str):
    settings = make_settings(tmp_path / "data", docs_dir=str(tree(tmp_path)), site_url="https://gds-way.example/",
                             site_layout=layout)
    [finding] = site_checks(settings)
    assert finding.status == "warning" and "page links are paths no site publishes" in finding.detail
    assert shown in finding.detail and finding.fix == "set DOCSBOT_SITE_LAYOUT=middleman"


def test_a_layout_under_which_no_file_is_a_page_is_a_warning(tmp_path: Path):
    settings = make_settings(tmp_path / "data", docs_dir=str(tree(tmp_path)), site_url="https://gds-way.example/",
                             site_layout="mkdocs")
    [finding] = site_checks(settings)
    assert finding.status == "warning" and "none of the 5 documents is a page of a mkdocs site" in finding.detail
    assert finding.fix == "set DOCSBOT_SITE_LAYOUT=middleman"


def test_no_generator_recognised_is_a_warning(tmp_path: Path):
    root = tmp_path / "plain"
    root.mkdir()
    (root / "a.md").write_text("# A\n")
    [finding] = site_checks(make_settings(tmp_path / "data", docs_dir=str(root), site_url="https://x.example/"))
    assert finding.status == "warning" and "no docs site generator recognised" in finding.detail


def test_every_file_not_indexed_is_counted_by_reason(tmp_path: Path):
    root = tree(tmp_path)
    (root / "source" / "partials").mkdir()
    (root / "source" / "partials" / "_banner.html.erb").write_text("<p>Banner</p>\n")
    (root / "source" / "notes.rst").write_text("Notes\n=====\n")
    (root / "Gemfile").write_text("gem 'middleman'\n")
    [finding] = unindexed_checks(make_settings(tmp_path / "data", docs_dir=str(root), include=["**/*.md.erb"]))
    assert finding.status == "warning" and finding.detail == (
        "1 file: no format docsbot reads (.yml) (e.g. config/tech-docs.yml); "
        "1 file: no format docsbot reads (no suffix) (e.g. Gemfile); "
        "1 file: pages of a format docsbot reads, left out by DOCSBOT_INCLUDE/DOCSBOT_EXCLUDE: add their globs "
        "(e.g. source/notes.rst); "
        "1 file: partials and layouts, no page of their own: read where a page includes them "
        "(e.g. source/partials/_banner.html.erb)")
    (root / "source" / "notes.rst").unlink()
    [finding] = unindexed_checks(make_settings(tmp_path / "data", docs_dir=str(root), include=["**/*.md.erb"]))
    assert finding.status == "ok" and finding.detail.startswith("1 file: no format docsbot reads (.yml)")
