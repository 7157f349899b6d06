"""The promoted 👎 cases of a golden set in `python -m eval run`: which fail, and which cite
documents that changed since the feedback (compared as insights.candidates compares a candidate's)."""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from insights.candidates import DocState, changed_docs, index_docs
from eval.golden import GoldenCase, GoldenError
from rag import Index


def recorded_docs(case_id: str, feedback: Mapping[str, Any]) -> dict[str, DocState]:
    """The documents a promoted case recorded at feedback time (its golden line's "feedback")."""
    docs = feedback.get("docs", {})
    if not isinstance(docs, dict) or not all(isinstance(d, dict) for d in docs.values()):
        raise GoldenError(f"case {case_id}: 'feedback.docs' must map doc paths to {{\"commit\", \"chunk_hashes\"}}")
    return {p: DocState(str(d.get("commit") or ""), frozenset(d.get("chunk_hashes") or ())) for p, d in docs.items()}


def feedback_report(store: Index, cases: Iterable[GoldenCase], failures: Mapping[str, list[str]]) -> dict[str, Any]:
    """For `python -m eval run`: the promoted 👎 cases that fail (each one fails the run) and
    those whose documents changed since the feedback (reported, so a reviewer re-checks them)."""
    recorded = {c.id: recorded_docs(c.id, c.feedback) for c in cases if c.feedback is not None}
    current = index_docs(store, (p for docs in recorded.values() for p in docs))
    return {
        "cases": len(recorded),
        "failing": [case_id for case_id in recorded if case_id in failures],
        "docs_changed": {
            case_id: changed for case_id, docs in recorded.items() if (changed := changed_docs(docs, current))
        },
    }
