"""What kind of answer a question asks for, and whether a passage holds one: a duration for
"how long" or "how far back", a person or role for "who", a reason for "why" (also any passage of
an ADR's Context or Decision section), steps or commands for "how do I", a day or a frequency for
"when" and "how often", a time of day for "what time", an amount for "how much" or "what is the
upper limit" (numbers as words too). English question words only; a follow-up without a question
word of its own asks for what its thread asked.

Used by the extractive answerer (to prefer such passages, and to decline a quote that lacks the
value asked: `lacks_value`) and by the engine (a question asking for a value goes on past the
answerability gate, and is answered only by a quote that holds the value).
"""
from __future__ import annotations

import re
from collections.abc import Sequence

_KINDS = (
    ("duration", re.compile(r"\bhow long\b|\bfor how many\b|\bhow many (?:days|hours|minutes|weeks|months|years)\b"
                            r"|\bhow (?:soon|quickly|fast)\b|\bdeadline\b|\bhow far back\b", re.I)),
    ("person", re.compile(r"^\W*who\b|\bwho(?:m|se)?\b|\bwhich (?:team|person|role)\b", re.I)),
    ("reason", re.compile(r"\bwhy\b|\breasons?\b|\bwhat for\b|\brationale\b", re.I)),
    ("steps", re.compile(r"\bhow (?:do|can|should|would) (?:i|we|you)\b|\bhow to\b|\bsteps?\b|\bset ?up\b"
                         r"|\bis there (?:a|any) way\b|\bwhat(?:'s| is) the (?:best |right )?way\b", re.I)),
    # "what time" of day, not "what time window / frame / zone"
    ("time", re.compile(r"\bwhat time\b(?!\s+(?:window|frame|period|range|span|zone|limit|slot)s?\b)"
                        r"|\bat what hour\b", re.I)),
    # a frequency ("how often": every 180 days, monthly) is answered as a "when" is
    ("when", re.compile(r"^\W*when\b|\bwhich day\b|\bhow (?:often|frequently)\b", re.I)),
    # "what is the upper limit": the limit word may come with a word before it
    ("amount", re.compile(r"\bhow much\b|\bhow many\b|\bwhat(?:'s| is| are)(?: the| our| my)? (?:\w+ )?(?:cost|price|"
                          r"fee|limit|maximum|minimum|deductible|budget|allowance|stipend|rate|cap|size|quota)s?\b",
                          re.I)),
)
# Numbers as words count as numbers ("ten days of paid leave").
_COUNT = r"(?:\d+(?:[.,]\d+)?|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty|thirty|hundred)"
_DURATION = re.compile(rf"\b{_COUNT}\s*(?:[-–]\s*\d+\s*)?(?:s|secs?|seconds?|min(?:ute)?s?|h|hours?|"
                       r"(?:business |working |calendar )?days?|weeks?|months?|years?)\b"
                       r"|\b(?:a|one|two|three) (?:day|week|month|year)s?\b"
                       r"|\b(?:seconds|minutes|hours|days|weeks)\s*[=:]\s*\d", re.I)  # timedelta(days=31)
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
# a number of its own: not the digits of a name ("37signals")
_AMOUNT = re.compile(rf"(?<![\w-])\d[\d.,]*(?!\d|[a-z]{{3}})|[%$€£]|\b{_COUNT}\b", re.I)
_CLOCK = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm|a\.m\.|p\.m\.)|\b\d{1,2}[:.]\d{2}\b|\bnoon\b|\bmidnight\b", re.I)
_WHEN = re.compile(r"\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|january|february|march|april|"
                   r"may|june|july|august|september|october|november|december|\d{1,2}:\d{2}|daily|weekly|monthly|"
                   r"quarterly|annually|every)\b", re.I)


# "can I ...?", "so do we ...?", "I joined in March. do I have to ...?"
_YES_NO = re.compile(r"(?:^|[.?!,]\s+|\bso\s+)(?:can|could|do|does|did|is|are|am|should|will|would|may|must|have|has|"
                     r"shall)\s+(?:i|we|you|they|it|he|she|there|my|our|the|a|an|this|that)\b", re.I)


def asks_yes_no(question: str) -> bool:
    """Whether a sentence of the question is a yes/no one ("can I deploy on Friday?")."""
    return bool(_YES_NO.search(question))


def question_kind(question: str) -> str | None:
    """duration, person, reason, steps, time, when or amount: the kind of passage that answers it, if known."""
    return next((kind for kind, pattern in _KINDS if pattern.search(question)), None)


def thread_kind(question: str, history: Sequence[tuple[str, str]]) -> str | None:
    """The kind a question asks for; a follow-up that names none ("and if I'm the primary
    caregiver?", "what about ingest-worker?") asks for the kind its thread's last question did;
    one with a question word of its own ("where can I find the recording?") asks for what that word asks."""
    asked = [text for speaker, text in history if speaker == "user"]
    if (kind := question_kind(question)) or _OWN_QUESTION.search(question) or not asked:
        return kind
    return question_kind(asked[-1])


_URL = re.compile(r"\w+://\S+")  # a link's digits are no value
# "what if ..." and "what about ..." ask the thread's question again of something else
_OWN_QUESTION = re.compile(r"\b(?:where|which|who|whom|whose|how|when|why)\b|\bwhat\b(?! if\b| about\b)", re.I)
# The values a quote must hold to answer a question of the kind (a "when" is as often answered by
# an event, "after the incident is resolved", as by a date: not judged).
VALUES = {"duration": _DURATION, "amount": _AMOUNT, "time": _CLOCK}
# What a how-to's answer shows: a code block, a command in a code span, or a numbered step.
_COMMAND = re.compile(r"^\s*(?:```|~~~)|`[^`\n]+`|^\s*\d+[.)]\s", re.M)
# The kinds a quote can be checked against (see `lacks_kind`): below the answerability gate, a
# quote that holds what such a question asks for is worth more than a decline (rag/engine.py).
CHECKED = {**VALUES, "steps": _COMMAND}


def lacks_value(kind: str | None, text: str) -> bool:
    """Whether a quote lacks the value its question asks for: a duration, an amount, a time of
    day. Other kinds (who, why, how, when) are not judged by a pattern."""
    return kind in VALUES and lacks_kind(kind, text)


def lacks_kind(kind: str | None, text: str) -> bool:
    """Whether a quote lacks what a checked kind of question asks for (`CHECKED`): its value, or
    for "how do I" a command or a step; False for the kinds not checked."""
    pattern = CHECKED.get(kind or "")
    return pattern is not None and not pattern.search(_URL.sub(" ", text))


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
    pattern = {"person": _PERSON, "when": _WHEN, **VALUES}.get(kind or "")
    return 1.0 if pattern is not None and pattern.search(passage) else 0.0
