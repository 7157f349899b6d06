"""Whether an answer holds what was asked, how long it is, and what markup it leaves for Slack.

A case's `facts` are regular expressions written from its gold answer (the number, name, command
or day asked for, with its common variants); an answer holds the fact when every one matches it,
case-insensitively. Only a confident answer can hold it: a decline never does, even when its near
miss happens to match. Sets whose golden files are not ours (../shared) take their facts from an
overlay in eval/facts/, a JSON object {row id: [regex, ...]}, named by the suite's "facts" key.

Lengths are in words, of the whole answer and of its prose (fenced code and table rows left out),
over the confident answers. Markup residue is source markup a Slack message shows as is, once the
answer went through the one renderer every answer path posts with (rag/slack_text.to_mrkdwn): HTML
tags, Markdown headings, links, images and bold, reStructuredText roles and directives, AsciiDoc
macros and blocks, MDX imports and admonitions, `{#anchor}` and `{{generator}}` tokens.
"""
from __future__ import annotations

import html
import json
import re
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from eval import metrics
from eval.golden import GoldenCase, GoldenError, patterns
from rag import NOT_SURE_LEAD
from rag.slack_text import to_mrkdwn

_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.M | re.S)
_CODE_SPAN = re.compile(r"(?<![:\w])`[^`\n]+`")  # not an RST role's `target`
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$", re.M)
_CITATION = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")
_WORDY = re.compile(r"\w")
RESIDUE = {
    "html tag": re.compile(r"</?[A-Za-z][\w-]*(?:\s+[\w:-]+(?:=(?:\"[^\"]*\"|'[^']*'|\S+))?)*\s*/?>"),
    "markdown heading": re.compile(r"^\s*#{1,6}\s+\S", re.M),
    "markdown link": re.compile(r"!?\[[^\]\n]+\]\([^)\s]+\)"),
    "markdown bold": re.compile(r"\*\*\S[^*\n]*\*\*|__\S[^_\n]*__"),
    "rst role or directive": re.compile(r":[a-z][\w:+-]*:`|^\s*\.\. [\w:-]+::", re.M),
    "asciidoc": re.compile(r"\b(?:xref|link|image|include):\S*\[|^\s*\[(?:source|NOTE|TIP|WARNING)[,\]]"
                           r"|^\s*(?:====|\*\*\*\*)\s*$", re.M),
    "mdx": re.compile(r"^\s*(?:import\s.+\sfrom\s['\"]|:::)", re.M),
    "callout": re.compile(r"\[!(?:NOTE|TIP|WARNING|IMPORTANT|CAUTION)\]", re.I),
    "anchor or generator token": re.compile(r"\{#[\w-]+\}|\{\{[^}]*\}\}"),
}


def holds(answer: str, facts: Sequence[str]) -> bool:
    """Every fact matches the answer as read: a bold sentence's markers are not in the way."""
    read = answer.replace("**", "")
    return all(re.search(p, read, re.I) for p in facts)


def words(text: str) -> int:
    """Whitespace-separated tokens holding a letter or digit (not fences, pipes or citation marks)."""
    return sum(1 for token in _CITATION.sub(" ", text).split() if _WORDY.search(token))


def prose(text: str) -> str:
    """The answer without its fenced code blocks and table rows."""
    return _TABLE_ROW.sub(" ", _FENCE.sub(" ", text))


def residue(text: str) -> list[str]:
    """The kinds of markup left in an answer as Slack shows it, outside its code blocks and code
    spans (the renderer's escapes undone: an escaped `<div>` is still a tag on the reader's screen)."""
    shown = _CODE_SPAN.sub(" ", _FENCE.sub(" ", html.unescape(to_mrkdwn(text))))
    return [kind for kind, pattern in RESIDUE.items() if pattern.search(shown)]


def load_overlay(path: Path) -> dict[str, tuple[str, ...]]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GoldenError(f"cannot read facts overlay {path}: {exc}") from None
    rows = {k: v for k, v in raw.items() if k != "note"} if isinstance(raw, dict) else None
    if rows is None or not all(isinstance(v, list) and v for v in rows.values()):
        raise GoldenError(f"{path}: expected {{row id: [regex, ...]}} (and a \"note\")")
    return {str(k): patterns(v, f"{path}: {k}") for k, v in rows.items()}


def with_overlay(cases: list[GoldenCase], overlay: Path | None) -> list[GoldenCase]:
    """The cases with the overlay's facts (an id the golden files lack is an error)."""
    if overlay is None:
        return cases
    facts = load_overlay(overlay)
    if unknown := sorted(set(facts) - {c.id for c in cases}):
        raise GoldenError(f"{overlay}: no such row ids: {', '.join(unknown[:5])}")
    return [replace(c, facts=facts[c.id]) if c.id in facts else c for c in cases]


def shown(answer: Any) -> str:
    """What a reply shows of the docs: a confident answer, or a not-sure reply's passage without
    its lead ("" for a decline)."""
    if answer.answered:
        return answer.answer
    if answer.confidence == "not_sure":
        return answer.answer.removeprefix(NOT_SURE_LEAD).strip()
    return ""


def fact_report(cases: Sequence[GoldenCase], answers: Sequence[Any], failures: Any) -> dict[str, Any]:
    """Over the answerable cases with facts: the fact held (a confident answer holds it), held
    with the gold page cited, and shown (in a confident answer or a not-sure passage that cites a
    gold page), that last also over the follow-ups alone; how the covered cases were framed (not
    sure, declined) and the uncovered ones (confident answers as a count, to pool over sets;
    not-sure replies); the lengths of what was shown (answers and passages) and its markup
    residue rate."""
    held, held_gold, fact_shown, lengths, prose_lengths, marked = [], [], [], [], [], []
    followups: list[bool] = []  # fact shown, on the rows asked in a thread (`history`)
    uncovered = [c for c in cases if not c.answerable]
    for case, answer in zip(cases, answers):
        text = shown(answer)
        if text:
            lengths.append(float(words(text)))
            prose_lengths.append(float(words(prose(text))))
            kinds = residue(text)
            marked.append(bool(kinds))
            if kinds:
                failures.add(case.id, "markup residue: " + ", ".join(kinds))
        if case.answerable and case.facts:
            gold = any(c.doc_path in case.gold_doc_ids for c in answer.citations)
            held.append(answer.answered and holds(answer.answer, case.facts))
            held_gold.append(held[-1] and gold)
            fact_shown.append(bool(text) and gold and holds(text, case.facts))
            if case.history:
                followups.append(fact_shown[-1])
            if not fact_shown[-1]:
                failures.add(case.id, "the fact is not shown: " + " & ".join(case.facts))
            elif not held[-1]:
                failures.add(case.id, "the fact is shown in a not-sure passage: " + " & ".join(case.facts))
    covered = [(c, a) for c, a in zip(cases, answers) if c.answerable]
    return {
        "fact_held_rate": metrics.mean(held),
        "fact_held_confident": metrics.mean(held_gold),
        "fact_shown": metrics.mean(fact_shown),
        "fact_cases": len(held),
        "followup_fact_shown": metrics.mean(followups),
        "followup_fact_cases": len(followups),
        "not_sure_rate": metrics.mean([a.confidence == "not_sure" for _, a in covered]),
        "declined_rate": metrics.mean([a.confidence == "declined" for _, a in covered]),
        "gold_shown_rate": metrics.mean([a.confidence != "declined" and any(cited.doc_path in case.gold_doc_ids
                                                                            for cited in a.citations)
                                         for case, a in covered]),
        "uncovered": len(uncovered),
        "uncovered_answered": sum(a.answered for c, a in zip(cases, answers) if not c.answerable),
        "uncovered_not_sure": sum(a.confidence == "not_sure" for c, a in zip(cases, answers) if not c.answerable),
        "answer_words_p50": metrics.percentile(lengths, 50),
        "answer_words_p90": metrics.percentile(lengths, 90),
        "prose_words_p50": metrics.percentile(prose_lengths, 50),
        "prose_words_p90": metrics.percentile(prose_lengths, 90),
        "markup_residue_rate": metrics.mean(marked),
    }


def pooled(reports: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Confident answers and not-sure replies to unanswerable questions, and the follow-ups' fact
    shown, over all sets together, and the worst set's fact held and fact shown (the targets are
    per set)."""
    total = sum(r.get("uncovered", 0) for r in reports.values())

    def worst(key: str) -> list | None:
        figures = {name: r[key] for name, r in reports.items() if r.get(key) is not None}
        return list(metrics.worst(figures)) if figures else None

    followups = sum(r.get("followup_fact_cases", 0) for r in reports.values())
    return {
        "followup_fact_shown_pooled": (sum(r["followup_fact_shown"] * r["followup_fact_cases"]
                                           for r in reports.values() if r.get("followup_fact_cases"))
                                       / followups if followups else None),
        "uncovered_answered_pooled": (sum(r.get("uncovered_answered", 0) for r in reports.values()) / total
                                      if total else None),
        "uncovered_not_sure_pooled": (sum(r.get("uncovered_not_sure", 0) for r in reports.values()) / total
                                      if total else None),
        "worst_fact_held": worst("fact_held_rate"),
        "worst_fact_shown": worst("fact_shown"),
    }
