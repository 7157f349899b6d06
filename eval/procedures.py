"""Scores of answers a person acts on (the golden sets in eval/procedures/).

A case may list `expect_steps` (texts that must all appear in the answer, in this order: the
document's) and `expect_exception` (texts of which one must appear: the doc qualifies the rule,
and the answer must say so). Every answered case is also checked for balanced code fences.
A set's docs can be a Git bundle (the openshift/runbooks corpus): it is cloned once, at its
HEAD, into the temporary folder, and reused.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval import metrics
from eval.golden import GoldenCase
from rag import fences_balanced


def steps_in_order(answer: str, steps: Sequence[str]) -> bool:
    """Every step is in the answer (case-insensitive), each after the one before it."""
    text, at = answer.lower(), 0
    for step in steps:
        found = text.find(step.lower(), at)
        if found < 0:
            return False
        at = found + len(step)
    return True


def mentions(answer: str, texts: Sequence[str]) -> bool:
    return any(t.lower() in answer.lower() for t in texts)


def procedure_report(cases: Sequence[GoldenCase], answers: Sequence[Any], failures: Any) -> dict[str, float | None]:
    """steps_in_order_rate, fences_balanced_rate and exception_rate over the cases that ask for
    them (None where no case does); a miss is added to `failures`."""
    steps, fences, exceptions = [], [], []
    for case, answer in zip(cases, answers):
        text = answer.answer if answer.answered else ""
        if answer.answered:
            fences.append(fences_balanced(text))
            if not fences[-1]:
                failures.add(case.id, "a code fence is left open")
        if case.expect_steps:
            steps.append(steps_in_order(text, case.expect_steps))
            if not steps[-1]:
                failures.add(case.id, "steps missing or out of order: " + " → ".join(case.expect_steps))
        if case.expect_exception:
            exceptions.append(mentions(text, case.expect_exception))
            if not exceptions[-1]:
                failures.add(case.id, "the exception is not mentioned: " + " / ".join(case.expect_exception))
    return {
        "steps_in_order_rate": metrics.mean(steps),
        "fences_balanced_rate": metrics.mean(fences),
        "exception_rate": metrics.mean(exceptions),
    }


def checkout(bundle: Path) -> Path:
    """A clone of a Git bundle, made once per bundle file (path, size and time) and reused."""
    stat = bundle.stat()
    key = hashlib.sha1(f"{bundle.resolve()}\0{stat.st_size}\0{stat.st_mtime_ns}".encode()).hexdigest()[:12]
    target = Path(tempfile.gettempdir()) / f"docsbot-eval-{bundle.stem}-{key}"
    if not target.is_dir():
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        subprocess.run(["git", "clone", "-q", str(bundle), str(partial)], check=True, timeout=300)
        partial.rename(target)
    return target
