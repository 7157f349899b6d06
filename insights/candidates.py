"""Thumbs-down answers awaiting review, grouped by their likely cause.

A candidate is a logged answer with at least one active 👎 that was neither promoted to the
golden set nor rejected. Its cause is the first that applies:

* `no_access`: the bot abstained because the covering documents are above the level;
* `other` for operational failures (provider down, index unavailable): not a docs problem;
* `nothing_retrieved`: no chunk was selected: the docs (or their wording) miss the topic;
* `doc_changed`: a document the answer used was edited or deleted since (compared with the
  current index by commit and by the text hashes of the chunks used): maybe already fixed;
* `not_cited`: chunks were selected but the bot abstained, or cited none of the documents
  the person said they expected;
* `other`: a cited, unchanged answer someone still found wrong.

Shown by `/docs feedback` and the App Home, listed by `python -m eval candidates`; the eval run
checks its promoted cases against the index the same way (eval.candidates).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from rag import Index
from rag import suffixes
from state.answers import Feedback, LoggedAnswer
from state.gaps import Reader, quoted

CAUSES = {
    "nothing_retrieved": "Nothing retrieved: no chunk passed the similarity floor (a documentation gap?)",
    "not_cited": "Retrieved but not cited: chunks were selected, the answer abstained or cited other docs",
    "doc_changed": "Used a doc that changed since: re-check, it may already be fixed",
    "no_access": "Access abstention: the covering docs are above the readers' level",
    "other": "Other",
}
_OPERATIONAL = {"provider_error", "index_unavailable"}
# a doc path in a comment: a name with a suffix some format reads (`.md`, `.mdx`, `.rst`, ...)
_PATH_TOKEN = re.compile(r"[\w./-]+(?:%s)\b" % "|".join(
    re.escape(suffix) for suffix in sorted(suffixes(), key=len, reverse=True)))


@dataclass(frozen=True)
class DocState:
    """What an answer saw of one document, or what the index holds of it now."""

    commit: str
    chunk_hashes: frozenset[str]

    def to_json(self) -> dict[str, Any]:
        return {"commit": self.commit, "chunk_hashes": sorted(self.chunk_hashes)}


def used_docs(answer: LoggedAnswer) -> dict[str, DocState]:
    """The documents of an answer's selected chunks, with the commit and chunk hashes it saw."""
    docs: dict[str, tuple[str, set[str]]] = {}
    for chunk in answer.retrieved:
        commit, hashes = docs.setdefault(chunk["doc_path"], (chunk.get("commit") or "", set()))
        hashes.add(chunk["text_hash"])
    return {path: DocState(commit, frozenset(hashes)) for path, (commit, hashes) in docs.items()}


def index_docs(store: Index, paths: Iterable[str]) -> dict[str, DocState]:
    """The current state of these documents in the index (absent: not indexed any more)."""
    docs: dict[str, tuple[str, set[str]]] = {}
    for row in store.chunk_columns(paths, "commit", "text_hash"):
        docs.setdefault(row["doc_path"], (row["commit"] or "", set()))[1].add(row["text_hash"])
    return {path: DocState(commit, frozenset(hashes)) for path, (commit, hashes) in docs.items()}


def changed_docs(recorded: Mapping[str, DocState], current: Mapping[str, DocState]) -> dict[str, str]:
    """doc path -> how it changed since it was recorded ("deleted", "new commit abc1234",
    "text changed"); unchanged documents are left out."""
    changed: dict[str, str] = {}
    for path, then in recorded.items():
        now = current.get(path)
        if now is None:
            changed[path] = "deleted"
        elif then.commit and now.commit and then.commit != now.commit:
            changed[path] = f"new commit {now.commit[:7]}"
        elif then.chunk_hashes - now.chunk_hashes:
            changed[path] = "text changed"
    return changed


def mentioned_docs(texts: Iterable[str | None], known: Iterable[str]) -> list[str]:
    """Indexed documents named in free text (a full path, or a file name ending a path)."""
    known = sorted(set(known))
    found: list[str] = []
    for text in filter(None, texts):
        for token in _PATH_TOKEN.findall(text):
            token = token.lstrip("./")
            found += [p for p in known if p == token or p.endswith("/" + token)]
    return list(dict.fromkeys(found))


@dataclass
class Candidate:
    answer: LoggedAnswer
    votes: list[Feedback]
    cause: str
    expected_docs: list[str] = field(default_factory=list)
    changed: dict[str, str] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return self.answer.answer_id

    @property
    def last_vote_ms(self) -> int:
        return max(v.updated_ms for v in self.votes)

    def doc_paths(self) -> list[str]:
        return list(dict.fromkeys(self.answer.doc_paths() + self.expected_docs))

    def readable_by(self, reader: Reader) -> bool:
        """Whether `reader` may read the question, its thread and the answer (state/gaps.py)."""
        return bool(quoted(reader, [self.answer]))

    def expected(self, reader: Reader) -> dict[str, str]:
        """voter -> what they expected, of what `reader` may read: a public question's, or their own."""
        public = self.answer.public and self.readable_by(reader)
        return {v.user: v.expected for v in self.votes if v.expected and (public or v.user == reader.user)}

    def to_json(self, reader: Reader) -> dict[str, Any]:
        """The candidate for `python -m eval candidates --json`; what `reader` may not read is null."""
        a, words, expected = self.answer, self.readable_by(reader), self.expected(reader)
        return {
            "id": a.answer_id,
            "cause": self.cause,
            "question": a.question if words else None,
            "history": a.history if words else [],
            "level": a.level,
            "asker": a.asker if words else None,
            "asked_ms": a.created_ms,
            "answered": a.answered,
            "abstain_reason": a.abstain_reason,
            "answer": a.answer if words else None,
            "model": a.model,
            "prompt_version": a.prompt_version,
            "index_commit": a.index_commit,
            "retrieved": a.retrieved,
            "cited_docs": [c["doc_path"] for c in a.citations],
            "expected_docs": self.expected_docs,
            "changed_docs": self.changed,
            "doc_paths": self.doc_paths(),
            "votes": [
                {"user": v.user, "reason": v.reason, "expected": expected.get(v.user), "updated_ms": v.updated_ms}
                for v in self.votes
            ],
        }


def classify(answer: LoggedAnswer, expected: list[str], changed: Mapping[str, str]) -> str:
    if answer.abstain_reason == "no_access":
        return "no_access"
    if answer.abstain_reason in _OPERATIONAL:
        return "other"
    if not answer.retrieved:
        return "nothing_retrieved"
    if changed:
        return "doc_changed"
    cited = {c["doc_path"] for c in answer.citations}
    if not answer.answered or (expected and not cited.intersection(expected)):
        return "not_cited"
    return "other"


def find_candidates(
    downvoted: Iterable[tuple[LoggedAnswer, list[Feedback]]], store: Index, since_ms: int | None = None
) -> list[Candidate]:
    """The candidates among pending 👎 answers (`AnswerLog.pending_downvoted`) whose latest 👎
    is at or after `since_ms`, newest first."""
    downvoted = list(downvoted)
    used = {a.answer_id: used_docs(a) for a, _ in downvoted}
    current = index_docs(store, (p for docs in used.values() for p in docs))
    known = store.doc_hashes().keys()
    found = []
    for answer, votes in downvoted:
        expected = mentioned_docs((v.expected for v in votes), known)
        changed = changed_docs(used[answer.answer_id], current)
        candidate = Candidate(answer, votes, classify(answer, expected, changed), expected, changed)
        if since_ms is None or candidate.last_vote_ms >= since_ms:
            found.append(candidate)
    return sorted(found, key=lambda c: c.last_vote_ms, reverse=True)


def grouped(candidates: Iterable[Candidate]) -> dict[str, list[Candidate]]:
    """Candidates by cause, in the order of CAUSES; causes without candidates are left out."""
    groups: dict[str, list[Candidate]] = {cause: [] for cause in CAUSES}
    for candidate in candidates:
        groups[candidate.cause].append(candidate)
    return {cause: found for cause, found in groups.items() if found}


def when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def render(candidates: list[Candidate], reader: Reader) -> str:
    """Plain-text summary: one section per cause with the documents involved, then each answer,
    its question and the expected answers only where `reader` may read them (state/gaps.py)."""
    if not candidates:
        return "No thumbs-down answers waiting for review."
    lines = [f"{len(candidates)} thumbs-down answer(s) to review "
             "(`python -m eval promote ID --expect PATH...` or `python -m eval reject ID`)"]
    for cause, members in grouped(candidates).items():
        docs = Counter(p for c in members for p in c.doc_paths())
        lines += ["", f"{CAUSES[cause]} ({len(members)})",
                  "  docs involved: " + (", ".join(f"{p} ({n})" for p, n in docs.most_common()) or "none")]
        for c in members:
            a = c.answer
            question = repr(a.question) if c.readable_by(reader) else "(asked privately: not quoted)"
            lines.append(f"  {a.answer_id}  {when(c.last_vote_ms)}  level {a.level}  {len(c.votes)} down  {question}")
            details = [f"abstained ({a.abstain_reason})" if not a.answered
                       else "cited " + ", ".join(dict.fromkeys(x["doc_path"] for x in a.citations))]
            if reasons := sorted({v.reason for v in c.votes if v.reason}):
                details.append("reasons: " + ", ".join(reasons))
            details += [f"expected: {expected!r}" for expected in c.expected(reader).values()]
            details += [f"{p}: {how}" for p, how in c.changed.items()]
            lines.append("    " + "; ".join(details))
    return "\n".join(lines)
