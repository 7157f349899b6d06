"""The README's quick start, run as written on a real git repository without front matter.

With every step, the first question gets a cited answer; with the default-level step left out,
`docsbot sync` and `docsbot doctor` say that no member can read anything and name the fix, and
`docsbot ask` exits 1 (it declined). Issue 24: a repository without front matter answered nobody,
and nothing said why.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER = "https://github.com/acme/docs.git"
RUNBOOK = """# API server down

## Meaning

The Kubernetes API server does not answer health checks for five minutes.

## Mitigation

To restart the API server, delete its pods: `oc delete pod -n openshift-kube-apiserver -l app=openshift-kube-apiserver`.
The pods are recreated by the operator within a minute.
"""
OTHER = "# Etcd slow\n\n## Meaning\n\nEtcd disk latency stays above 100 ms for ten minutes.\n"


def quick_start() -> list[str]:
    """The command lines of the README's quick start block."""
    section = (ROOT / "README.md").read_text(encoding="utf-8").split("\n## Quick start", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.S)
    assert block is not None, "the quick start has no bash block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def runbooks(tmp: Path) -> Path:
    """A git repository of two runbooks without front matter (like openshift/runbooks)."""
    repo = tmp / "runbooks"
    (repo / "alerts").mkdir(parents=True)
    (repo / "alerts" / "KubeAPIDown.md").write_text(RUNBOOK, encoding="utf-8")
    (repo / "alerts" / "EtcdSlow.md").write_text(OTHER, encoding="utf-8")
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "runbooks"]):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args], cwd=repo, check=True)
    return repo


def run(lines: list[str], tmp: Path) -> subprocess.CompletedProcess:
    """The lines as one bash script in a clone-like folder (bot/access.example.toml beside it),
    the placeholder repository URL replaced by the local one; stdout and stderr together."""
    clone = tmp / "clone"
    (clone / "bot").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "bot" / "access.example.toml", clone / "bot")
    script = "\n".join(line.replace(PLACEHOLDER, str(tmp / "runbooks")) for line in lines)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCSBOT_", "OPENAI_", "SLACK_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return subprocess.run(["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=600)


def test_the_quick_start_answers_the_first_question(tmp_path: Path) -> None:
    lines = quick_start()
    assert any(PLACEHOLDER in line for line in lines) and lines[-1].startswith("docsbot ask ")
    runbooks(tmp_path)
    done = run(lines, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out  # the last line: `docsbot ask` answered
    assert "2 of 2 documents readable at `public`" in out
    assert "oc delete pod" in out and "[1] API server down" in out and "Traceback" not in out


def test_without_the_level_step_sync_and_doctor_name_the_fix(tmp_path: Path) -> None:
    lines = [line for line in quick_start() if "DOCSBOT_DEFAULT_LEVEL" not in line]
    runbooks(tmp_path)
    done = run(lines, tmp_path)
    out = done.stdout + done.stderr
    assert done.returncode == 1, out  # `docsbot ask` declined
    assert "0 of 2 documents readable at `public`" in out
    assert "warning: nobody in Slack gets an answer" in out  # docsbot sync
    assert re.search(r"WARNING +readable docs", out)  # docsbot doctor
    assert out.count("set DOCSBOT_DEFAULT_LEVEL=public") >= 2
    assert "docsbot ask --level" in out and "this conversation" not in out
