"""Settings are validated in one place: ranges, cross-field rules, patterns and link templates,
each failure one line naming the variable; every numeric setting at 0, -1 and a huge value is a
one-line error or works, never a hang or a traceback."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from commands.cli import main
from tests.support.settings_walk import numeric_settings

REPO = Path(__file__).resolve().parent.parent


def test_every_numeric_setting_at_zero_minus_one_and_huge(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    done = subprocess.run([sys.executable, "-m", "tests.support.settings_walk", str(tmp_path)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    cases = [json.loads(line) for line in done.stdout.splitlines()]
    walked = {(c["variable"], c["value"]) for c in cases}
    assert len(walked) == 3 * len(numeric_settings()) and len(numeric_settings()) >= 30
    accepted = 0
    for case in cases:
        where = f"{case['variable']}={case['value']} ({case['command']})"
        assert "Traceback" not in case["stderr"], where + "\n" + case["stderr"]
        if case["rc"] == 0:
            accepted += case["command"] == "ask"
            if case["command"] == "ask":
                assert "answer" in json.loads(case["stdout"]), where
        else:
            assert case["rc"] == 2, where
            lines = case["stderr"].strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith("docsbot: error: invalid configuration: "), where
            assert case["variable"] in lines[0], where
    assert 0 < accepted < len(cases)  # both branches ran: some zeros are valid (overlap, retries)


@pytest.mark.parametrize("variable, value, message", [
    ("DOCSBOT_CHUNK_SIZE", "0", "DOCSBOT_CHUNK_SIZE: must be between 50 and 100,000, got 0"),
    ("DOCSBOT_TOP_K", "-3", "DOCSBOT_TOP_K: must be between 1 and 1,000, got -3"),
    ("PORT", "99999", "PORT: must be between 1 and 65,535, got 99999"),
    ("DOCSBOT_MIN_SIMILARITY", "7", "DOCSBOT_MIN_SIMILARITY: must be between 0 and 1, got 7.0"),
    ("DOCSBOT_MIN_SIMILARITY", "nan", "DOCSBOT_MIN_SIMILARITY: must be between 0 and 1, got nan"),
    ("DOCSBOT_CHUNK_OVERLAP", "1000", "DOCSBOT_CHUNK_OVERLAP (1000) must be smaller than DOCSBOT_CHUNK_SIZE (1000)"),
    ("DOCSBOT_CANDIDATES", "3", "DOCSBOT_TOP_K (4) must not exceed DOCSBOT_CANDIDATES (3)"),
    ("DOCSBOT_LINK_TEMPLATE", "{repo_web}/tree/{sha}/{path}", "DOCSBOT_LINK_TEMPLATE: unknown placeholder {sha}"),
    ("DOCSBOT_LINK_TEMPLATE", "{repo_web", "DOCSBOT_LINK_TEMPLATE: not a valid template"),
    ("DOCSBOT_INCLUDE", '["../../**"]', "DOCSBOT_INCLUDE: pattern '../../**' must be a relative path"),
    ("DOCSBOT_EXCLUDE", "drafts", "DOCSBOT_EXCLUDE: not valid JSON"),
    ("DOCSBOT_PATH_LEVELS", '{"/etc/**": "public"}', "DOCSBOT_PATH_LEVELS: pattern '/etc/**'"),
    ("DOCSBOT_REPO_SUBDIR", "../outside", "DOCSBOT_REPO_SUBDIR: pattern '../outside'"),
    ("DOCSBOT_SITE_LAYOUT", "wordpress", "DOCSBOT_SITE_LAYOUT: Input should be 'auto', 'mkdocs'"),
    ("DOCSBOT_SITE_URL", "docs.example.com", "DOCSBOT_SITE_URL: must be the site's http(s) address"),
    ("DOCSBOT_SITE_URL", "ftp://docs.example.com/", "DOCSBOT_SITE_URL: must be the site's http(s) address"),
    ("DOCSBOT_LIST_WEIGHTS", "titles=1", "DOCSBOT_LIST_WEIGHTS: no list named titles (the lists: dense, bm25)"),
    ("DOCSBOT_LIST_WEIGHTS", "bm25=2000", "DOCSBOT_LIST_WEIGHTS: must be between 0 and 1,000, got bm25=2000.0"),
    ("DOCSBOT_LIST_WEIGHTS", "dense=-1", "DOCSBOT_LIST_WEIGHTS: must be between 0 and 1,000, got dense=-1.0"),
    ("DOCSBOT_LIST_WEIGHTS", "dense=0,bm25=0", "DOCSBOT_LIST_WEIGHTS: the lists' weights cannot all be 0"),
    ("DOCSBOT_LIST_WEIGHTS", "bm25", "DOCSBOT_LIST_WEIGHTS: must be list=weight pairs like dense=1.0,bm25=1.5"),
    ("DOCSBOT_LIST_WEIGHTS", "bm25=high", "DOCSBOT_LIST_WEIGHTS: Input should be a valid number"),
    ("DOCSBOT_LIST_WEIGHTS", '{"bm25": 2', "DOCSBOT_LIST_WEIGHTS: not valid JSON"),
    ("DOCSBOT_BM25_WEIGHT", "2", "DOCSBOT_BM25_WEIGHT: replaced by DOCSBOT_LIST_WEIGHTS, e.g. "
                                 "DOCSBOT_LIST_WEIGHTS=bm25=2"),
    ("DOCSBOT_DENSE_WEIGHT", "0.5", "DOCSBOT_DENSE_WEIGHT: replaced by DOCSBOT_LIST_WEIGHTS, e.g. "
                                    "DOCSBOT_LIST_WEIGHTS=dense=0.5"),
])
def test_bad_values_are_one_line_naming_the_variable(
    variable: str, value: str, message: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("DOCSBOT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv(variable, value)
    assert main(["status"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"docsbot: error: invalid configuration: {message}"), err


def test_defaults_and_the_presets_are_valid(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCSBOT_DATA_DIR", str(tmp_path))
    for preset in ("github", "gitlab", "{repo_web}/src/{commit}/{path}#{anchor}"):
        monkeypatch.setenv("DOCSBOT_LINK_TEMPLATE", preset)
        assert main(["status"]) == 0


@pytest.mark.parametrize("value", ["bm25=2.5", " dense = 1 , bm25=2.5 ", '{"bm25": 2.5}'])
def test_list_weights_are_keyed_by_list_name_the_others_at_their_defaults(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from foundation.settings import Settings
    from foundation.wiring import retrieval_config

    monkeypatch.setenv("DOCSBOT_LIST_WEIGHTS", value)
    config = retrieval_config(Settings(_env_file=None))
    assert dict(config.list_weights) == {"dense": 1.0, "bm25": 2.5}
    with pytest.raises(TypeError):  # read-only, as the rest of the frozen configuration
        config.list_weights["bm25"] = 1.0  # type: ignore[index]


def test_every_numeric_setting_has_a_range() -> None:
    """A numeric setting added without a range would accept 0, -1 or 1e9 silently."""
    from foundation.settings import BOUNDS, Settings

    numeric = {name for name, field in Settings.model_fields.items() if field.annotation in (int, float)}
    assert numeric - set(BOUNDS) == set()
