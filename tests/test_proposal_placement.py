"""A proposed text lands at the end of the named section, in the page's own markup (issue 53)."""
from __future__ import annotations

import pytest

from proposals.placement import in_markup, new_page, place
from rag import AccessRules, parse_document

MARKDOWN = """---
title: Deploying
access: team
---
# Deploying

Read this first.

## Staging

Deploy to staging with `make stage`.

```sh
# not a heading
make stage
```

### Rollback

Run `make rollback`.

## Production

Ask the on-call lead.
"""


def test_markdown_text_goes_at_the_end_of_the_sections_own_text_and_front_matter_is_untouched() -> None:
    placed = place("ops/deploy.md", MARKDOWN, "Staging", "Staging deploys need the VPN on.")
    assert placed is not None
    assert placed.startswith("---\ntitle: Deploying\naccess: team\n---\n")
    assert "make stage\n```\n\nStaging deploys need the VPN on.\n\n### Rollback\n" in placed
    # nothing else moved
    assert placed.replace("\nStaging deploys need the VPN on.\n", "") == MARKDOWN


def test_a_heading_path_tells_apart_two_sections_of_one_name() -> None:
    page = "# Guide\n\n## Linux\n\n### Install\n\napt install x\n\n## macOS\n\n### Install\n\nbrew install x\n"
    assert place("guide.md", page, "Install", "text") is None  # ambiguous: refused
    placed = place("guide.md", page, "macOS › Install", "Or use the installer.")
    assert placed is not None and placed.endswith("brew install x\n\nOr use the installer.\n")
    # the page, parsed as the index parses it, has the text in that section
    doc = parse_document("guide.md", placed.encode(), AccessRules({}), 1_000_000)
    [section] = [s for s in doc.sections if s.headings[-1:] == ("Install",) and "brew" in s.blocks[0].text]
    assert "Or use the installer." in "\n".join(block.text for block in section.blocks)


def test_the_preamble_of_a_titled_page_is_its_title_headings_own_text() -> None:
    placed = place("ops/deploy.md", MARKDOWN, "", "Deploys freeze on Fridays.")
    assert placed is not None and "Read this first.\n\nDeploys freeze on Fridays.\n\n## Staging" in placed


def test_an_unknown_section_an_unwritable_format_and_an_open_mdx_component_are_refused() -> None:
    assert place("ops/deploy.md", MARKDOWN, "Billing", "x") is None
    assert place("notes.txt", "Some notes\n", "", "x") is None
    mdx = "# Setup\n\n## Install\n\n<Tabs>\n<TabItem value=\"npm\">\n\nnpm i x\n\n</TabItem>\n\n## Use\n\n</Tabs>\n"
    assert place("setup.mdx", mdx, "Install", "x") is None
    closed = mdx.replace("\n## Use\n\n</Tabs>\n", "\n</Tabs>\n\n## Use\n")
    assert place("setup.mdx", closed, "Install", "x") is not None


RST = """Operations
==========

Intro.

Backups
-------

Nightly at 02:00.

Restores
--------

Ask the DBA.
"""


def test_restructuredtext_sections_and_code_become_a_code_block_directive() -> None:
    addition = "Check the backup first:\n\n```sh\npg_restore --list dump\n```"
    placed = place("ops.rst", RST, "Backups", addition)
    assert placed is not None
    assert ("Nightly at 02:00.\n\nCheck the backup first:\n\n.. code-block:: sh\n\n   pg_restore --list dump\n\n"
            "Restores\n--------\n") in placed


def test_asciidoc_sections_skip_delimited_blocks_and_code_becomes_a_source_block() -> None:
    page = "= Runbook\n\n== Alerts\n\n----\n== not a heading\n----\n\n== Escalation\n\nPage the lead.\n"
    placed = place("runbook.adoc", page, "Alerts", "Silence with:\n\n```\namtool silence\n```")
    assert placed is not None
    assert "== not a heading\n----\n\nSilence with:\n\n----\namtool silence\n----\n\n== Escalation" in placed


@pytest.mark.parametrize("path, head", [("new/page.md", "# VPN setup\n"), ("new/page.rst", "VPN setup\n=========\n"),
                                        ("new/page.adoc", "= VPN setup\n")])
def test_a_new_page_opens_with_a_title_in_its_markup(path: str, head: str) -> None:
    page = new_page(path, "VPN setup", "Install the client from the portal.")
    assert page == f"{head}\nInstall the client from the portal.\n"


def test_prose_is_kept_as_written() -> None:
    text = "Use *bold* and `code`.\n\n- one\n- two"
    assert in_markup(text, "markdown") == text and in_markup(text, "rst") == text
