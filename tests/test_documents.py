from pathlib import Path

import pytest

from rag.documents import AccessRules, DocumentError, load_folder, parse_document
from rag.paths import glob_match, scan_folder
from rag.levels import Level

RULES = AccessRules({"public/**": Level.public, "team/*.md": Level.team})


def parse(text: str | bytes, path: str = "x.md", rules: AccessRules = RULES, limit: int = 10_000):
    raw = text.encode() if isinstance(text, str) else text
    return parse_document(path, raw, rules, limit)


def test_front_matter_fields_and_body():
    doc = parse("---\ntitle: Deploy Policy\nversion: 2.3\naccess: team\narea: eng\nowner: platform\n---\n"
                "# Deploy Policy\nBody\n")
    assert (doc.title, doc.version, doc.access, doc.area, doc.owner) == (
        "Deploy Policy", "2.3", Level.team, "eng", "platform")
    assert doc.body == "Body"  # the sections as Markdown (markdown_of): the H1 repeating the title is the title


def test_crlf_and_bom_are_tolerated_and_hash_equal():
    unix = parse("---\ntitle: T\naccess: public\n---\nline one\nline two\n")
    windows = parse(b"\xef\xbb\xbf---\r\ntitle: T\r\naccess: public\r\n---\r\nline one\r\nline two\r\n")
    assert windows.body == unix.body and windows.access == Level.public
    assert windows.content_hash == unix.content_hash


def test_level_falls_back_to_path_rule_then_default_restricted():
    assert parse("# Hi\n", "public/a/b.md").access == Level.public
    assert parse("# Hi\n", "team/a.md").access == Level.team
    assert parse("# Hi\n", "team/sub/a.md").access == Level.restricted  # '*' does not cross folders
    assert parse("---\ntitle: No level\n---\ntext", "other.md").access == Level.restricted


def test_title_from_first_heading_or_file_name():
    assert parse("intro\n# Real Title\n", "a.md").title == "Real Title"
    assert parse("no heading", "runbooks/db-failover.md").title == "db failover"


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\ntitle: x\n", "no closing"),
        ("---\ntitle: [unclosed\n---\nbody", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody", "must be a mapping"),
        ("---\naccess: secret\n---\nbody", "unknown access level 'secret'"),
        ("---\ntitle:\n  nested: true\n---\nbody", "'title' must be text"),
    ],
)
def test_broken_front_matter_is_rejected_with_reason(text, reason):
    with pytest.raises(DocumentError, match=reason):
        parse(text)


def test_binary_huge_and_non_utf8_files_are_rejected():
    with pytest.raises(DocumentError, match="binary"):
        parse(b"\x89PNG\x00\x00data")
    with pytest.raises(DocumentError, match="too large"):
        parse("x" * 20_000)
    with pytest.raises(DocumentError, match="not UTF-8"):
        parse(b"caf\xe9")


def test_glob_semantics():
    assert glob_match("a.md", "**/*.md") and glob_match("x/y/a.md", "**/*.md")
    assert not glob_match("x/a.txt", "**/*.md")
    assert glob_match("drafts/a.md", "drafts/**") and not glob_match("a/drafts/b.md", "drafts/**")


def test_load_folder_skips_bad_files_and_keeps_the_rest(tmp_path: Path):
    (tmp_path / "good.md").write_text("---\ntitle: Good\naccess: public\n---\ntext")
    (tmp_path / "broken.md").write_text("---\ntitle: [oops\n---\ntext")
    (tmp_path / "image.md").write_bytes(b"\x00\x01\x02")
    (tmp_path / "big.md").write_text("y" * 5000)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "x.md").write_text("hidden")
    (tmp_path / "notes.py").write_text("print()")
    docs, skipped = load_folder(tmp_path, ["**/*.md"], [], RULES, 4000)
    assert [d.path for d in docs] == ["good.md"]
    assert dict(skipped) == {
        "big.md": "file too large (5,000 bytes; limit 4,000)",
        "broken.md": "front matter is not valid YAML at line 3",
        "image.md": "binary file",
    }
    assert scan_folder(tmp_path, ["**/*.md"], ["good.md"]) == (["big.md", "broken.md", "image.md"], [])
