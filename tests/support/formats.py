"""Helpers for the format parsers' tests: reading includes inside a docs root, a section's
blocks, and finding markup of the source format left in a block's text."""
from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from rag.formats.model import Block, Parsed

_FENCE = re.compile(r"^\s*(`{3,})")
_CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1")


def reader(root: Path) -> Callable[[str], str | None]:
    """A Source.read that reads only inside `root`."""
    root = root.resolve()

    def read(rel: str) -> str | None:
        path = (root / rel).resolve()
        return path.read_text(encoding="utf-8") if path.is_relative_to(root) and path.is_file() else None

    return read


def blocks(parsed: Parsed, *headings: str) -> list[Block]:
    return [b for s in parsed.sections if s.headings == headings for b in s.blocks]


def markup_left(block: Block, patterns: dict[str, re.Pattern[str]], with_title: bool = False) -> list[str]:
    """Lines of a block (outside code blocks and inline code; its title too, `with_title`) that
    match one of the named patterns of a source format's markup."""
    if block.kind == "code":
        return []
    found, fence = [], ""
    for line in [block.title, *block.text.split("\n")] if with_title else block.text.split("\n"):
        if match := _FENCE.match(line):
            fence = "" if fence and match.group(1).startswith(fence) else fence or match.group(1)
            continue
        if fence:
            continue
        bare = _CODE_SPAN.sub("", line)
        found.extend(f"{name}: {line!r}" for name, rx in patterns.items() if rx.search(bare))
    return found
