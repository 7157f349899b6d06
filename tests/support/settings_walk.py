"""Run by tests/test_settings_validation.py in a subprocess: every numeric setting at 0, -1 and a
huge value through the real `docsbot` command (`sync --json`, then `ask --json` when the value is
accepted), one JSON line per case on stdout. A case that hangs makes faulthandler dump the stack
and end the process, so the test names it."""
from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import logging
import os
import sys
import traceback
from pathlib import Path

from commands.cli import env_name, main
from foundation.settings import Settings

VALUES = {int: ("0", "-1", "9" * 30), float: ("0", "-1", "1e300")}
CASE_TIMEOUT_S = 120


def numeric_settings() -> list[tuple[str, type]]:
    return [(name, f.annotation) for name, f in Settings.model_fields.items() if f.annotation in VALUES]


def run(argv: list[str]) -> tuple[int | str, str, str]:
    out, err = io.StringIO(), io.StringIO()
    logging.getLogger().handlers.clear()  # main's basicConfig then logs to this case's stderr
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc: int | str = main(argv)
        except BaseException:  # noqa: BLE001 - what escapes main is the finding
            rc = "exception"
            err.write(traceback.format_exc())
    return rc, out.getvalue(), err.getvalue()


def walk(work: Path) -> None:
    docs = work / "docs"
    docs.mkdir(parents=True, exist_ok=True)
    (docs / "deploy.md").write_text("---\naccess: public\n---\n# Deploys\n\nDeploys are frozen on Fridays.\n")
    base = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    for n, (name, kind) in enumerate(numeric_settings()):
        for value in VALUES[kind]:
            variable = env_name(name)
            os.environ.clear()
            os.environ.update(base, DOCSBOT_DATA_DIR=str(work / f"index-{n}-{value[:3]}"), DOCSBOT_DOCS_DIR=str(docs))
            os.environ[variable] = value
            faulthandler.dump_traceback_later(CASE_TIMEOUT_S, exit=True)
            results = [run(["sync", "--json"])]
            if results[0][0] == 0:
                results.append(run(["ask", "are deploys frozen on fridays", "--json"]))
            faulthandler.cancel_dump_traceback_later()
            for command, (rc, out, err) in zip(("sync", "ask"), results):
                print(json.dumps({"variable": variable, "value": value, "command": command, "rc": rc,
                                  "stdout": out, "stderr": err}), file=sys.__stdout__, flush=True)


if __name__ == "__main__":
    walk(Path(sys.argv[1]))
