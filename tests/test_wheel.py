"""The built wheel runs on its own: every file read at run time is package data.

An editable install reads files from the checkout, so it hides a file the wheel leaves out (it
once left out `rag/answerability.json`, which every start loads). This builds the wheel, installs
it without dependencies into a fresh venv that sees the dependencies of `.venv` but neither the
checkout nor its editable install, and asks a question from a folder outside the checkout."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RUNTIME_FILES = ["rag/answerability.json", "bot/access.example.toml", "bot/manifest.json",
                 "state/migrations/env.py", "state/migrations/script.py.mako", "eval/thresholds.json"]


def build_wheel(out: Path) -> Path:
    """Built from a copy: setuptools writes `build/` and `*.egg-info` into the tree it builds."""
    source = out.parent / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "*.egg-info", "__pycache__", ".docsbot", ".pytest_cache"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out),
                    str(source)], check=True, capture_output=True, timeout=240)
    [wheel] = out.glob("docsbot-*.whl")
    return wheel


def fresh_venv(root: Path) -> Path:
    """A venv whose only view of `.venv` is its site-packages folder as a plain path: the
    editable install's finder (a .pth file there) is not run, so `rag` etc. come from the wheel."""
    venv.EnvBuilder(with_pip=False).create(root)
    python = root / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    (Path(site) / "zz_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_the_wheel_holds_every_runtime_file_and_answers_a_question(tmp_path: Path) -> None:
    wheel = build_wheel(tmp_path / "dist")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert [f for f in RUNTIME_FILES if f not in names] == []
    python = fresh_venv(tmp_path / "venv")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)  # what `pip install --no-deps` does for a pure wheel
    docs = tmp_path / "docs"
    shutil.copytree(REPO / "docs-sync", docs, ignore=shutil.ignore_patterns(".git"))
    work = tmp_path / "work"
    work.mkdir()
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "DOCSBOT_DATA_DIR": str(work / "data"),
           "DOCSBOT_DOCS_DIR": str(docs), "HF_HUB_OFFLINE": "1"}
    where = subprocess.run([str(python), "-c", "import rag; print(rag.__file__)"], cwd=work, env=env,
                           capture_output=True, text=True, timeout=60)
    assert where.stdout.startswith(site), where.stdout + where.stderr  # the wheel's copy, not the checkout
    asked = subprocess.run([str(python), "-m", "commands.cli", "ask", "--docs", str(docs), "--level", "team",
                            "How do I set up the VPN?"], cwd=work, env=env, capture_output=True, text=True,
                           timeout=240)
    assert asked.returncode == 0, asked.stderr[-2000:]
    assert "[1]" in asked.stdout and "Traceback" not in asked.stderr
