"""What kind of answer a question asks for, and whether a passage holds one: a duration for
"how long", a person or role for "who", a reason for "why" (also any passage of an ADR's Context
or Decision section), steps or commands for "how do I", a day or time for "when", an amount for
"how much". English question words only.

Used by the extractive answerer (to prefer such passages) and the answerability gate (a "how
much" question whose passages state no amount is not answered by them).
"""
from __future__ import annotations

import re

_KINDS = (
    ("duration", re.compile(r"\bhow long\b|\bfor how many\b|\bhow many (?:days|hours|minutes|weeks|months|years)\b"
                            r"|\bhow soon\b", re.I)),
    ("person", re.compile(r"^\W*who\b|\bwho(?:m|se)?\b|\bwhich (?:team|person|role)\b", re.I)),
    ("reason", re.compile(r"\bwhy\b|\breasons?\b|\bwhat for\b|\brationale\b", re.I)),
    ("steps", re.compile(r"\bhow (?:do|can|should|would) (?:i|we|you)\b|\bhow to\b|\bsteps?\b|\bset ?up\b", re.I)),
    ("when", re.compile(r"^\W*when\b|\bwhat time\b|\bwhich day\b", re.I)),
    ("amount", re.compile(r"\bhow much\b|\bhow many\b"
                          r"|\bwhat(?:'s| is) the (?:cost|price|fee|limit|maximum|minimum)\b", re.I)),
)
_DURATION = re.compile(r"\b\d+(?:[.,]\d+)?\s*(?:[-–]\s*\d+\s*)?(?:min(?:ute)?s?|h|hours?|days?|business days|"
                       r"weeks?|months?|years?)\b|\b(?:a|one|two|three) (?:day|week|month|year)s?\b", re.I)
_PERSON = re.compile(r"\b(?:manager|head|lead|owner|on-call|engineer|director|team|cto|ceo|cfo|officer|dpo|"
                     r"approver|admin(?:istrator)?|sre|chair|committee|department|finance|hr|legal|primary|"
                     r"secondary|deciders?|[A-Z][a-z]+ [A-Z][a-z]+)\b")
_REASON = re.compile(r"\bbecause\b|\bso that\b|\bin order to\b|\bto avoid\b|\bcaus|\bdue to\b|\bneeded\b|"
                     r"\bwe need\b|\breasons?\b|\bso we\b|\bwhich means\b|\binstead of\b", re.I)
# A numbered item that opens like a statement ("1. There is an open SEV1 incident", "2. The
# problem cannot be solved ...") lists conditions or facts, not something to do.
_STATEMENT = re.compile(r"^\d+[.)]\s+\**(?:the|there|a|an|it|its|this|that|these|those|no|none|all|each|every|"
                        r"our|your|their)\b", re.I)
_REASON_SECTIONS = re.compile(r"\b(?:context|rationale|why|motivation|background|problem statement)\b", re.I)
_WHEN = re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|"
                   r"may|june|july|august|september|october|november|december|\d{1,2}:\d{2}|daily|weekly|monthly|"
                   r"quarterly|annually|every)\b", re.I)


def question_kind(question: str) -> str | None:
    """duration, person, reason, steps, when or amount: the kind of passage that answers it, if known."""
    return next((kind for kind, pattern in _KINDS if pattern.search(question)), None)


def fits_kind(kind: str | None, headings: str, passage: str) -> float:
    """How clearly a passage holds the kind of answer asked for, 0 to 1 (for "how do I": a command
    or a numbered step, 1; a passage under a "Step" heading that is neither, 0.5, a numbered
    condition being neither)."""
    code = passage.startswith(("```", "~~~")) or "\n```" in passage
    if kind == "steps":
        if code or (re.match(r"^\d+[.)]\s", passage) and not _STATEMENT.match(passage)):
            return 1.0
        return 0.5 if re.search(r"\bsteps?\b", headings, re.I) else 0.0
    if code:  # a code block answers "how", not who, why, when or how long
        return 0.0
    if kind == "reason":
        return 1.0 if _REASON.search(passage) or _REASON_SECTIONS.search(headings) else 0.0
    pattern = {"duration": _DURATION, "person": _PERSON, "when": _WHEN, "amount": re.compile(r"\d")}.get(kind or "")
    return 1.0 if pattern is not None and pattern.search(passage) else 0.0
