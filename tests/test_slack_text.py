"""The one renderer from the document model's Markdown to Slack mrkdwn (rag/slack_text.py), used
by every answer path through bot/blocks.mrkdwn: each dialect's markup as Slack shows it, and none
of it raw."""
from __future__ import annotations

import re
from pathlib import Path

from bot.blocks import mrkdwn
from rag.answer import Citation
from rag.config import LinkConfig
from rag.site_links import AnswerLinks, site_pages
from rag.slack_text import to_mrkdwn


def test_inline_markup_of_every_dialect_is_slacks():
    assert to_mrkdwn("Use **strict** and __bold__ but keep `__init__` and `**kw`.") == (
        "Use *strict* and *bold* but keep `__init__` and `**kw`.")


def test_links_absolute_keep_their_url_relative_and_in_page_only_their_text():
    assert to_mrkdwn("See [the guide](https://vite.dev/guide/), [features](/guide/features.html), "
                     "[setup](../setup.md) and [below](#server-port).") == (
        "See the guide (https://vite.dev/guide/), features, setup and below.")


def test_a_table_is_header_value_lines_and_a_wide_one_a_code_block():
    narrow = "| Option | Default |\n|---|---|\n| `port` | 5173 |\n| strictPort | false |\n"
    assert to_mrkdwn(narrow) == "Option: `port`; Default: 5173\nOption: strictPort; Default: false\n"
    wide = "| a | b | c | d | e |\n|---|---|---|---|---|\n| 1 | 2 | 3 | 4 | 5 |"
    assert to_mrkdwn(wide) == "```\n" + wide + "\n```\n"


def test_callouts_are_a_quoted_line_with_their_label():
    assert to_mrkdwn("**Warning:** Back up first.") == "&gt; *Warning:* Back up first."
    assert to_mrkdwn("> [!NOTE]\n> Read this.") == "&gt; *Note:*\n&gt; Read this."


def test_ids_fence_languages_and_control_characters_never_show():
    shown = to_mrkdwn("## Setup {#setup}\n\n```bash\necho **x** <@U1> [a](#b)\n```\n<!channel>")
    assert shown == "## Setup\n\n```\necho **x** &lt;@U1&gt; [a](#b)\n```\n&lt;!channel&gt;"


_RAW = re.compile(r"\*\*\S|__\S|\]\(|\{#|\[!(?:NOTE|WARNING)\]|^\|.*\|$", re.M)


def test_no_raw_markup_of_the_document_model_reaches_an_answer():
    answer = ("**Note:** keep __this__.\n\n| A | B |\n|---|---|\n| [x](/a.html) | y |\n\n"
              "> [!WARNING]\n> careful [here](#h) {#id}\n\nSee [docs](https://d.example/x).")
    shown = mrkdwn(answer)
    assert _RAW.findall(shown) == [] and "https://d.example/x" in shown


def _citation(n: int, doc: str, page: str = "") -> Citation:
    return Citation(n, doc, doc, "", "", "a1b2c3d", "2026-10-01",
                    f"https://git.example.com/team/docs/blob/a1b2c3d/docs/{doc}#s", 0.9, "s", page_url=page)


def test_relative_links_and_anchors_open_the_published_page_or_the_file_at_the_commit():
    sited = _citation(1, "guide/start.md", "https://docs.example.com/guide/start/#install")
    bare = _citation(2, "ops/run.md")
    answer = ("Read [ports](#server-port) and [the FAQ](/faq.html) [1]. "
              "Then [deploy](deploy.md#roll-back), [start](../guide/start.md) and [here](#steps) [2]. `[c](#d)`")
    assert to_mrkdwn(answer, AnswerLinks([sited, bare])) == (
        "Read <https://docs.example.com/guide/start/#server-port|ports> and "
        "<https://docs.example.com/faq.html|the FAQ> [1]. "
        "Then <https://git.example.com/team/docs/blob/a1b2c3d/docs/ops/deploy.md#roll-back|deploy>, "
        "<https://docs.example.com/guide/start/|start> and "
        "<https://git.example.com/team/docs/blob/a1b2c3d/docs/ops/run.md#steps|here> [2]. `[c](#d)`")
    # Without a site, a site path cannot be placed: its text only; outside the docs, likewise.
    assert to_mrkdwn("See [faq](/faq.html) and [up](../../x.md) [1].", AnswerLinks([bare])) == "See faq and up [1]."


def test_a_link_to_an_uncited_page_follows_the_sites_url_rules(tmp_path: Path):
    (tmp_path / ".vitepress").mkdir()
    (tmp_path / ".vitepress" / "config.mts").write_text("export default { cleanUrls: true }\n")
    (tmp_path / "guide").mkdir()
    for page in ("guide/index.md", "guide/features.md"):
        (tmp_path / page).write_text("# Page\n")
    links = LinkConfig(repo_web="https://git.example.com/team/docs", pattern="{repo_web}/blob/{commit}/{path}#{anchor}",
                       repo_subdir="docs", site_url="https://vite.example", site_layout="auto", site_root=str(tmp_path))
    pages = site_pages(links)
    cited = _citation(1, "guide/index.md", "https://vite.example/guide/")
    shown = mrkdwn("Vite serves [features](./features.md#hmr) [1].", AnswerLinks([cited], pages))
    assert shown == "Vite serves <https://vite.example/guide/features#hmr|features> [1]."
    assert site_pages(LinkConfig("", "", "", site_url="https://vite.example", site_root=str(tmp_path / "gone"))) is None


def test_a_link_whose_text_is_code_is_a_link_and_code_inside_code_stays_as_written():
    answer = ("Errors like [`413`](https://developer.mozilla.org/413), [the `truststore` package](https://t.example/) "
              "and [`build.manifest` API](/guide/api-plugin#output-bundle-metadata) [1], but `[a](b)` is code.")
    links = AnswerLinks([_citation(1, "guide/build.md", "https://vite.example/guide/build")])
    assert to_mrkdwn(answer, links) == (
        "Errors like `413` (https://developer.mozilla.org/413), the `truststore` package (https://t.example/) "
        "and <https://vite.example/guide/api-plugin#output-bundle-metadata|`build.manifest` API> [1], "
        "but `[a](b)` is code.")
    assert "`build.manifest` API [1]" in mrkdwn(answer)  # unresolved: its text, code kept
    assert to_mrkdwn("The manager is [`yum`](https://en.wikipedia.org/wiki/Yum_(software)) (on AL2).") == (
        "The manager is `yum` (https://en.wikipedia.org/wiki/Yum_(software)) (on AL2).")  # parentheses in a URL
