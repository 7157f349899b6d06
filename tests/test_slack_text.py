"""The one renderer from the document model's Markdown to Slack mrkdwn (rag/slack_text.py), used
by every answer path through bot/blocks.mrkdwn: each dialect's markup as Slack shows it, and none
of it raw."""
from __future__ import annotations

import re

from bot.blocks import mrkdwn
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
