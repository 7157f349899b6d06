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

import pytest

from eval.__main__ import COMMANDS

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


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, set[str]]:
    """The wheel installed alone in a fresh venv: its python, its site-packages, the wheel's files."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(tmp_path / "dist")
    python = fresh_venv(tmp_path / "venv")
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)  # what `pip install --no-deps` does for a pure wheel
        return python, site, set(archive.namelist())


def test_the_wheel_holds_every_runtime_file_and_answers_a_question(
        wheel_venv: tuple[Path, str, set[str]], tmp_path: Path) -> None:
    python, site, names = wheel_venv
    assert [f for f in RUNTIME_FILES if f not in names] == []
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


def test_every_eval_command_the_wheel_ships_starts_from_it(wheel_venv: tuple[Path, str, set[str]],
                                                            tmp_path: Path) -> None:
    """Each `python -m eval` command's module imports from the wheel alone (no `tests` package
    there) and prints its usage."""
    python, site, _ = wheel_venv
    script = (
        "import importlib, sys\n"
        "from eval.__main__ import COMMANDS\n"
        "for name, (module, _) in COMMANDS.items():\n"
        "    try:\n"
        "        importlib.import_module(module).main([name, '--help'])\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code in (0, None), (name, exc.code)\n"
        "    assert importlib.import_module(module).__file__.startswith(sys.argv[1]), module\n"
        "    print('started', name)\n")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    started = subprocess.run([str(python), "-c", script, site], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=240)
    assert started.returncode == 0, started.stderr[-2000:]
    assert [line.split()[1] for line in started.stdout.splitlines() if line.startswith("started ")] == list(COMMANDS)
