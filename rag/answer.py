"""The answer contract shared by the CLI, the Slack bot, the eval and outside scripts."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

# Why an answer was withheld, in plain words for the person who asked.
ABSTAIN_MESSAGES = {
    "no_match": "I don't know: nothing in the docs covers this.",
    # no_match and declined when a section came close: it is named (Answer.near_miss) with the reply
    "unsure": "I'm not sure the docs answer this.",
    "no_access": (
        "I can't answer this here: the documents that cover it are above your access level "
        "(or above the level of everyone who can read this conversation)."
    ),
    "declined": "I don't know: the documents I found don't answer this.",
    "invalid_citations": "I couldn't write an answer that is backed by the docs, so I won't guess.",
    "provider_error": "The AI service is unavailable right now, so I can't answer.",
    "index_unavailable": "The docs index isn't ready (it is still being built or can't be read).",
}
# The lead of a not-sure reply: the gate doubted the match, so the closest passage is quoted and
# cited as a passage to read rather than as the answer (Answer.confidence "not_sure").
NOT_SURE_LEAD = "I couldn't find a sure answer; the closest passage is:"


@dataclass
class Citation:
    n: int
    doc_path: str
    title: str
    section: str
    version: str
    commit: str
    commit_date: str
    url: str
    score: float
    anchor: str = ""
    access: str = ""
    # The section on the published docs site (DOCSBOT_SITE_URL); "" when there is none, and
    # `url` (the commit permalink) is then the only link.
    page_url: str = ""
    # What a reader should know before trusting the page: "⚠ deprecated", "⚠ draft", "⚠ last
    # reviewed 14 months ago" ("last updated": by its last commit) past its review date; "" else.
    warning: str = ""


@dataclass
class Diagnostics:
    candidates: int = 0
    passed_threshold: int = 0
    selected: int = 0
    blocked: int = 0  # matches above the reader's level (never shown, only counted)
    injections_dropped: int = 0
    best_similarity: float = 0.0
    answerability: float | None = None  # p(answerable) of the calibrated gate (rag/answerability.py)
    rerank: str = ""  # "", "reranked", or "fallback: <why>" when the reranker failed
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class Answer:
    question: str
    answer: str
    answered: bool
    abstain_reason: str | None
    citations: list[Citation]
    diagnostics: Diagnostics
    level: str
    model: str = ""
    retry_after: float | None = None
    detail: str = ""  # the technical reason behind an abstention (for logs and operators)
    retrieved: list[dict[str, Any]] = field(default_factory=list)  # selected chunks: id, path, score...
    index_commit: str = ""  # the commit the index recorded when the question was answered
    # When no answer was given but a section the reader may see came close: that section, so a
    # false "I don't know" still gets the person to the page (never above the reader's level).
    near_miss: Citation | None = None
    # What a channel's scope changed (rag/scope.py): the answer came from outside it, or nothing
    # inside it answered; "" when the scope made no difference or there is none.
    scope_note: str = ""
    # How the reply frames what it shows: "answer" (confident, cited), "not_sure" (the closest
    # passage quoted and cited, `answered` false: still a gap to fill) or "declined" (nothing shown
    # but the near miss, if any).
    confidence: str = "declined"
    # Why the model's answer was not used and the docs were quoted instead ("provider_error": it
    # failed or ran out of time; "invalid_citations": its citations did not check out); "" else.
    fallback: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "answered": self.answered,
            "confidence": self.confidence,
            "fallback": self.fallback,
            "abstain_reason": self.abstain_reason,
            "citations": [_public(c) for c in self.citations],
            # `blocked` is never shown: it tells of documents above the reader's level (rag/engine.py)
            "diagnostics": {k: v for k, v in asdict(self.diagnostics).items() if k != "blocked"},
            "level": self.level,
            "model": self.model,
            "retry_after": self.retry_after,
            "detail": self.detail,
            "near_miss": _public(self.near_miss) if self.near_miss else None,
            "scope_note": self.scope_note,
        }


def _public(citation: Citation) -> dict[str, Any]:
    return {k: v for k, v in asdict(citation).items() if k not in ("anchor", "access")}
