"""Words that carry a question's meaning: lower-cased, stop words dropped, light stemming, and a
few synonym groups of the vocabulary docs use for the words people ask with ("how long is it
valid" → "expire", "who approves" → "sign-off"). English only: other languages' words pass
through unstemmed and match only themselves.

Shared by the full-text list weighting (rag/retrieval.py), the answerability features
(rag/answerability.py) and the extractive answerer (rag/extractive.py).
"""
from __future__ import annotations

import re
from typing import Iterable

def well_formed(text: str) -> str:
    """`text` with every lone surrogate (a JSON `\\ud800` in a Slack payload, undecodable argv
    bytes) as U+FFFD: the tokenizer, the full-text index and Postgres refuse them."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


WORD = re.compile(r"€|[a-z0-9][a-z0-9_.-]*[a-z0-9]|[a-z0-9]")
# Two-word forms spelled as one term before matching.
PHRASES = re.compile(r"\b(set|sign|log|roll)[ -](up|off|in|back)\b")
STOP = frozenset(
    """a about above after again all am an and any are as at be because been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here
    hers him his how i if in into is it its itself just me more most my no nor not of off on once only or
    other our ours out over own same she should so some such than that the their theirs them then there these
    they this those through to too under until up very was we were what when where which while who whom why
    will with would you your yours us tell know need want please anyone someone get got make made use used
    using way ok okay hi hey thanks thank docs doc documentation whats
    long take takes usually often around stay still last said one put right show far instead difference
    whose tomorrow today says none might miss since getting fired day days week weeks time times new first
    back best really actually go going see look find like good bad happen happens thing things something
    anything everything much many few lot lots kind sort also even ever never always sometimes exactly
    roughly usual normal normally typical typically yet already soon later early late next previous ago
    somebody anybody everyone people person mean means
    gets goes went gone making uses sees saying
    isn aren wasn weren doesn don didn hasn haven hadn won wouldn couldn shouldn mustn ll ve re""".split()
)  # the last lines: forms too short for stem() to reduce, and what is left of "isn't", "we'll"...
# Each group is matched as one term: the first word is the group's name.
SYNONYM_GROUPS = (
    ("expire", "expires", "expired", "expiry", "expiration", "valid", "validity", "lifetime"),
    ("retain", "retention", "keep", "kept", "keeps"),
    ("approve", "approval", "approver", "approves", "approved", "sign-off", "signoff"),
    ("decide", "decision", "decided", "choose", "chose", "chosen", "choice", "picked"),
    ("install", "installation", "setup", "set-up", "configure"),
    ("delete", "deletion", "remove", "removal", "purge", "erase"),
    ("page", "paged", "paging", "escalate", "escalation", "escalates", "escalated"),
    ("cost", "costs", "price", "pricing", "fee", "fees"),
    ("allow", "allowed", "permit", "permitted", "permission"),
    ("euro", "euros", "eur", "€"),
    ("minute", "minutes", "min", "mins"),
    ("rollback", "roll-back", "revert"),
)
SYNONYMS = {word: group[0] for group in SYNONYM_GROUPS for word in group}
_SUFFIXES = ("ations", "ation", "ings", "ing", "ied", "ies", "ed", "es", "s")


def stem(word: str) -> str:
    """A synonym group's name, or the word without a common English ending (and without the "un"
    of a negated participle: "unacknowledged" is about acknowledging)."""
    if len(word) >= 8 and word.startswith("un") and word.endswith(("ed", "able")):
        word = word[2:]
    if word in SYNONYMS:
        return SYNONYMS[word]
    for suffix in _SUFFIXES:
        if len(word) > len(suffix) + (2 if suffix in ("ied", "ies") else 3) and word.endswith(suffix):
            base = word[: -len(suffix)] + ("y" if suffix in ("ied", "ies") else "")
            return SYNONYMS.get(base, base)
    return word


_IDENTIFIER = re.compile(r"\b[A-Za-z][A-Za-z0-9]*[a-z0-9][A-Z][A-Za-z0-9]*\b")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def identifier_words(text: str, min_words: int = 3) -> str:
    """The words of each camel-case identifier of `min_words` words or more in a text, once each
    ("etcdMembersDown is down" → "etcd Members Down"): a full-text index sees such an identifier
    as one token, so a question that names the alert or class in words ("etcd members are down")
    would never match it. Two-word names are mostly brands (MariaDB, GitHub, OpenShift), whose
    halves ("open", "db") are not what they are about, so they count only where a word found by
    mistake costs nothing (min_words=2)."""
    words = (_CAMEL_BOUNDARY.sub(" ", name) for name in dict.fromkeys(_IDENTIFIER.findall(text)))
    return " ".join(w for w in words if w.count(" ") >= min_words - 1)


def content_terms(text: str) -> list[str]:
    """The stemmed content words of a text, in order, stop words dropped."""
    words = WORD.findall(PHRASES.sub(r"\1\2", text.lower()))
    return [term for word in words if word not in STOP and (term := stem(word)) not in STOP]


def matched_terms(asked: Iterable[str], words: set[str]) -> set[str]:
    """Question terms found among words, by prefix either way ('postgr' finds 'postgresql')."""
    return {t for t in asked if t in words or any(w.startswith(t) or (len(w) >= 4 and t.startswith(w)) for w in words)}


def question_terms(text: str) -> set[str]:
    """The terms whose presence in a passage tells whether it is about the question: content
    words of three letters or more, numbers left out (they are compared, not matched)."""
    return {t for t in content_terms(text) if len(t) >= 3 and not any(ch.isdigit() for ch in t)}


def coverage(asked: set[str], text: str) -> float:
    """Share of the asked terms that the text contains (1.0 when nothing was asked)."""
    if not asked:
        return 1.0
    return len(matched_terms(asked, set(content_terms(text)))) / len(asked)
