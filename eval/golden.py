"""Golden sets and their thresholds.

A golden file is JSONL, one case per line:
  {"id", "question", "gold_doc_ids": [paths relative to the docs folder], "answerable": bool,
   "level": "public"|"team"|"restricted" (default restricted: the case tests retrieval, not access),
   "history": [{"speaker": "user"|"agent", "text"}] (or "role": "user"|"assistant"),
   "expect_reason": "no_match"|"no_access"|...,
   "gold_answer": reference answer text (scored by token F1),
   "answer_contains": [texts the answer must contain, case-insensitive] (the right sentence was quoted),
   "facts": [regular expressions that must all match the answer, case-insensitive: it holds the
   number, name or command asked for; a decline never holds it] (see eval/facts.py; a set whose
   golden file is not ours takes them from an overlay keyed by row id),
   "expect_steps": [texts the answer must contain in this order], "expect_exception": [texts, one of
   which the answer must contain] (see eval/procedures.py),
   "feedback": {"answer_id", "docs": {path: {"commit", "chunk_hashes"}}, ...} (promoted 👎 answers,
   see eval/feedback_cli.py: such a case must pass, and changed docs are reported)}
Unknown keys are ignored, so outside corpora can carry extra fields. An expected `no_match` is
also met by `declined` (the generator found that the sources don't answer).

Thresholds are JSON: {"min": {metric: floor}, "max": {metric: ceiling}, "note": "..."}, with the
metric names of the `--json` report. For a golden file `X.jsonl` they are read from
`X.thresholds.json` beside it, else from `thresholds.json` in the same folder; with several golden
files (the default set plus promoted feedback cases) the first file's thresholds judge the run.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rag import ABSTAIN_MESSAGES, Level

EVAL_DIR = Path(__file__).resolve().parent
SPEAKERS = ("user", "agent")
ROLES = {"user": "user", "agent": "agent", "assistant": "agent"}  # "role" as chat transcripts name it


class GoldenError(ValueError):
    """A golden or thresholds file that cannot be used; the message names file, line and field."""


@dataclass(frozen=True)
class GoldenCase:
    id: str
    question: str
    gold_doc_ids: tuple[str, ...]
    answerable: bool
    level: Level = Level.restricted
    history: tuple[tuple[str, str], ...] = ()
    expect_reason: str | None = None
    gold_answer: str | None = None
    answer_contains: tuple[str, ...] = ()
    expect_steps: tuple[str, ...] = ()
    expect_exception: tuple[str, ...] = ()
    feedback: dict[str, Any] | None = None
    facts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Thresholds:
    minimum: dict[str, float]
    maximum: dict[str, float]
    source: Path | None = None

    def misses(self, report: dict[str, Any]) -> list[str]:
        """One line per threshold the report does not meet (a metric that was not measured,
        e.g. abstention recall on a set without unanswerable questions, counts as missed)."""
        problems = []
        for bounds, beats, word in ((self.minimum, float.__ge__, "<"), (self.maximum, float.__le__, ">")):
            for name, bound in bounds.items():
                value = report.get(name)
                if name not in report or isinstance(value, (dict, list, str)):
                    problems.append(f"{name} is not a metric of the report")
                elif value is None:
                    problems.append(f"{name} was not measured (threshold {bound})")
                elif not beats(float(value), float(bound)):
                    shown = f"{float(value):.3f}".rstrip("0").rstrip(".")
                    problems.append(f"{name} {shown} {word} {bound:g}")
        return problems


def default_golden_files(directory: Path = EVAL_DIR) -> list[Path]:
    """golden.jsonl first, then every other golden*.jsonl (e.g. promoted feedback cases)."""
    files = sorted(directory.glob("golden*.jsonl"), key=lambda p: (p.name != "golden.jsonl", p.name))
    if not files:
        raise GoldenError(f"no golden*.jsonl files in {directory}")
    return files


def load_golden(paths: list[Path]) -> list[GoldenCase]:
    cases: list[GoldenCase] = []
    seen: dict[str, str] = {}
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as exc:
            raise GoldenError(f"cannot read golden file {path}: {exc}") from None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            case = parse_case(line, where)
            if case.id in seen:
                raise GoldenError(f"{where}: duplicate id {case.id!r} (first at {seen[case.id]})")
            seen[case.id] = where
            cases.append(case)
    if not cases:
        raise GoldenError(f"no cases in {', '.join(map(str, paths))}")
    return cases


def parse_case(line: str, where: str) -> GoldenCase:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise GoldenError(f"{where}: not valid JSON ({exc.msg})") from None
    if not isinstance(raw, dict):
        raise GoldenError(f"{where}: expected a JSON object")

    def field(name: str, kind: type, required: bool = True) -> Any:
        value = raw.get(name)
        if value is None and not required:
            return None
        if not isinstance(value, kind) or (kind is str and isinstance(value, str) and not value.strip()):
            raise GoldenError(f"{where}: {name!r} must be a non-empty {kind.__name__}")
        return value

    gold = field("gold_doc_ids", list)
    if not all(isinstance(p, str) and p for p in gold):
        raise GoldenError(f"{where}: 'gold_doc_ids' must be a list of paths")
    answerable = field("answerable", bool)
    if answerable and not gold:
        raise GoldenError(f"{where}: an answerable case needs at least one gold doc id")
    reason = field("expect_reason", str, required=False)
    if reason is not None and (answerable or reason not in ABSTAIN_MESSAGES):
        raise GoldenError(
            f"{where}: 'expect_reason' is only for unanswerable cases and must be one of {', '.join(ABSTAIN_MESSAGES)}"
        )
    level = field("level", str, required=False)
    try:
        parsed_level = Level.parse(level) if level is not None else Level.restricted
    except ValueError as exc:
        raise GoldenError(f"{where}: {exc}") from None
    history = [(ROLES.get(str(t.get("speaker", t.get("role")))), t.get("text")) if isinstance(t, dict) else (None, None)
               for t in field("history", list, required=False) or []]
    if not all(speaker in SPEAKERS and isinstance(text, str) for speaker, text in history):
        raise GoldenError(f"{where}: 'history' must be a list of {{\"speaker\": \"user\"|\"agent\", \"text\": ...}}")
    return GoldenCase(
        id=str(field("id", str)),
        question=field("question", str),
        gold_doc_ids=tuple(gold),
        answerable=answerable,
        level=parsed_level,
        history=tuple((str(speaker), str(text)) for speaker, text in history),
        expect_reason=reason,
        gold_answer=field("gold_answer", str, required=False),
        answer_contains=tuple(str(t) for t in field("answer_contains", list, required=False) or ()),
        feedback=field("feedback", dict, required=False),
        expect_steps=tuple(str(t) for t in field("expect_steps", list, required=False) or ()),
        expect_exception=tuple(str(t) for t in field("expect_exception", list, required=False) or ()),
        facts=patterns(field("facts", list, required=False) or [], where),
    )


def patterns(raw: list[Any], where: str) -> tuple[str, ...]:
    """Regular expressions of a case's `facts`, each checked to compile."""
    for pattern in raw:
        try:
            re.compile(str(pattern), re.I)
        except re.error as exc:
            raise GoldenError(f"{where}: fact {pattern!r} is not a regular expression ({exc})") from None
    return tuple(str(p) for p in raw)


def thresholds_path(golden: Path) -> Path | None:
    for candidate in (golden.with_name(f"{golden.stem}.thresholds.json"), golden.with_name("thresholds.json")):
        if candidate.is_file():
            return candidate
    return None


def load_thresholds(path: Path | None) -> Thresholds:
    """Thresholds from a file; no file means nothing to meet."""
    if path is None:
        return Thresholds({}, {})
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GoldenError(f"cannot read thresholds file {path}: {exc}") from None
    if not isinstance(raw, dict) or set(raw) - {"min", "max", "note"}:
        raise GoldenError(f"{path}: expected {{\"min\": {{metric: value}}, \"max\": {{metric: value}}}}")
    bounds = [raw.get("min", {}), raw.get("max", {})]
    for bound in bounds:
        if not isinstance(bound, dict) or not all(isinstance(v, (int, float)) for v in bound.values()):
            raise GoldenError(f"{path}: 'min' and 'max' must map metric names to numbers")
    return Thresholds({k: float(v) for k, v in bounds[0].items()}, {k: float(v) for k, v in bounds[1].items()}, path)
