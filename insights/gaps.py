"""The docs-gaps report: what the docs could not answer, grouped by meaning and assigned to the
docs area and owners of the closest page, the 👎 with their reasons, and the pages answers rely
on that are overdue for review. The weekly digest (bot/digest.py), `/docs gaps` and
`docsbot report` all show this report, each at its reader's level.

A report is built at one level: only questions asked in a context at or below it are read
(state/gaps.py), and they are grouped after that filter, so a group, its count, its example and
the page it is assigned to come from what the reader may see, never from anything above it.
It is built for one reader (state/gaps.py `Reader`), since a question's words are as private as
the docs: a group's example, a 👎's question and expected answer, and the askers named are only
those `quoted` lets the reader read (their own; else only what was asked in a public channel).
The rest is a count inside its group, whose label is then the title of its closest page (the
docs' words, never a private question's); private 👎 are a count per page and reason.

Grouping is average-linkage agglomerative clustering of the questions' embeddings (the engine's
own model): the two groups whose questions are most similar on average merge while that average
cosine is at least GROUP_THRESHOLD. 0.50 was measured on the dev sets' 49 unanswerable follow-ups
(mtrag-govt-dev and mtrag-clapnq-dev, one per conversation, so any merge joins two different
conversations) and on 8 made-up needs asked 5 ways each: at 0.50 the 49 stay 48 groups (purity
0.98; the one merge is "Do I need a lawyer to fill out a restraining order?" with "Do I need to
hire a lawyer?") and 5 of the 8 needs are one group each, the other 3 split off one odd phrasing
("laptop refresh process"); 0.45 keeps 6 of 8 whole but merges 2 unrelated pairs (0.96), 0.40 all
8 but 3 pairs (0.94), 0.55-0.60 merge the same one pair and split more needs.

A group's page is the most frequent closest page among its questions (the near miss the answer
named, or the first section it selected), else the public page nearest to the group's mean
vector (no closer than ASSIGN_FLOOR: else no page, no owner). A page's area is its front matter
`area`, else its first folder (with several sources, in its source: `handbook:people`); its
owners come from the index's ownership snapshot, each source's own (rag/owners.py). A page is
overdue when its review date has passed: its front matter's `last_reviewed`, else its last
commit (the index's `commit_date`), plus its `review_in`, else DOCSBOT_REVIEW_DAYS
(rag/freshness.py); a deprecated page never is.
"""
from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from typing import Any

import numpy as np

from rag import Engine, Level, Review, StoreError, index_ownership, review_of
from rag.owners import Owners
from rag.paths import source_of
from state.config import GapsConfig
from state.db import StateDB
from state.gaps import Cited, Downvote, GapLog, Reader, Unanswered, question_key, quoted

GROUP_THRESHOLD = 0.50
ASSIGN_FLOOR = 0.20  # a page less similar than this to a group is not "the closest section" of anything
MAX_GROUPED = 1000  # the most recent questions of the window are grouped (the clustering is quadratic)
RELIED_ON_DAYS = 30  # citations counted for "pages answers rely on"
DAY_MS = 86_400_000
TOP = 10  # entries of each list


@dataclass(frozen=True)
class Page:
    path: str
    title: str
    area: str
    url: str
    owners: tuple[str, ...]
    commit_date: str
    reviewed: str  # front matter `last_reviewed` (ISO date), "" when none
    review_days: int  # front matter `review_in` in days, 0: DOCSBOT_REVIEW_DAYS
    status: str  # "" (current), "deprecated" or "draft"

    def review(self, default_days: int) -> Review | None:
        return review_of(self.reviewed, self.commit_date, self.review_days, default_days, self.status)


@dataclass(frozen=True)
class Gap:
    example: str  # the question nearest the group's centre the reader may read; "": none may be quoted
    count: int
    kinds: dict[str, int]  # no_match / below_gate / declined -> questions
    page: Page | None  # the closest page; None: nothing in the docs comes close
    last_ms: int
    askers: tuple[str, ...] = ()  # only with DOCSBOT_DIGEST_NAME_ASKERS, only of the questions quoted
    unquoted: int = 0  # questions of `count` the reader may not read (state/gaps.py `quoted`): counted only

    @property
    def label(self) -> str:
        """What the group is called: its example, else its page's title (the docs' words)."""
        return self.example or (self.page.title or self.page.path if self.page else "")


@dataclass(frozen=True)
class Complaint:
    """An answer someone gave a 👎, with their reason; or (`question` "") as many answers asked
    privately, with one reason and one page, as a count."""

    question: str
    reason: str
    expected: str
    voters: int
    page: Page | None
    askers: tuple[str, ...] = ()
    answers: int = 1


@dataclass(frozen=True)
class Overdue:
    page: Page
    citations: int  # in the last RELIED_ON_DAYS days
    days_overdue: int


def area_of(page: Page | None) -> str:
    """The page's front matter `area`, else its first folder; with several sources, in its source:
    `handbook:people` (so gaps and ratios group by source, and `/docs gaps handbook` reads one)."""
    if page is None:
        return ""
    source, path = source_of(page.path)
    area = page.area or (path.split("/", 1)[0] if "/" in path else "(top level)")
    return f"{source}:{area}" if source else area


def _owned(page: Page | None, names: set[str]) -> bool:
    return page is not None and any(owner.lower() in names for owner in page.owners)


@dataclass(frozen=True)
class Report:
    since_ms: int
    until_ms: int
    level: Level
    gaps: tuple[Gap, ...] = ()
    downvotes: tuple[Complaint, ...] = ()
    overdue: tuple[Overdue, ...] = ()
    # area -> (answered, unanswered) questions of the window: docsbot_unanswered_ratio{area}
    areas: dict[str, tuple[int, int]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not (self.gaps or self.downvotes or self.overdue)

    def owned_by(self, names: Iterable[str]) -> Report:
        """What is assigned to these owners (CODEOWNERS or front matter names, any case)."""
        wanted = {name.lower() for name in names}
        return replace(self, gaps=tuple(g for g in self.gaps if _owned(g.page, wanted)),
                       downvotes=tuple(d for d in self.downvotes if _owned(d.page, wanted)),
                       overdue=tuple(o for o in self.overdue if _owned(o.page, wanted)))

    def in_area(self, area: str) -> Report:
        """What is in this area; a source's name (several sources) is all of its areas."""
        wanted = area.strip().lower()

        def within(page: Page | None) -> bool:
            found = area_of(page).lower()
            return found == wanted or found.startswith(f"{wanted}:")

        return replace(self, gaps=tuple(g for g in self.gaps if within(g.page)),
                       downvotes=tuple(d for d in self.downvotes if within(d.page)),
                       overdue=tuple(o for o in self.overdue if within(o.page)))

    def owners(self) -> set[str]:
        """Every owner something in the report is assigned to."""
        pages = [g.page for g in self.gaps] + [d.page for d in self.downvotes] + [o.page for o in self.overdue]
        return {owner for page in pages if page is not None for owner in page.owners}

    def to_json(self) -> dict[str, Any]:
        def page(p: Page | None) -> dict[str, Any] | None:
            return None if p is None else {"path": p.path, "title": p.title, "area": area_of(p), "url": p.url,
                                           "owners": list(p.owners), "last_commit": p.commit_date,
                                           "last_reviewed": p.reviewed}

        def named(askers: tuple[str, ...]) -> dict[str, Any]:
            return {"askers": list(askers)} if askers else {}

        return {
            "since": _iso(self.since_ms), "until": _iso(self.until_ms), "level": self.level.name,
            "gaps": [{"example": g.example or None, "label": g.label, "count": g.count, "unquoted": g.unquoted,
                      "kinds": g.kinds, "area": area_of(g.page), "page": page(g.page), "last_asked": _iso(g.last_ms),
                      **named(g.askers)} for g in self.gaps],
            "downvotes": [{"question": d.question or None, "answers": d.answers, "reason": d.reason,
                           "expected": d.expected, "voters": d.voters, "area": area_of(d.page), "page": page(d.page),
                           **named(d.askers)} for d in self.downvotes],
            "overdue": [{"page": page(o.page), "citations": o.citations, "days_overdue": o.days_overdue}
                        for o in self.overdue],
            "unanswered_ratio": {area: round(missed / (answered + missed), 4)
                                 for area, (answered, missed) in sorted(self.areas.items()) if answered + missed},
        }


def _iso(ms: int) -> str:
    return _instant(ms).isoformat(timespec="seconds")


def group_by_meaning(vectors: np.ndarray, threshold: float = GROUP_THRESHOLD) -> list[list[int]]:
    """Average-linkage agglomerative groups of the rows of `vectors` (see the module docstring).
    The average cosine between two groups is the dot product of their sums of unit vectors over
    the product of their sizes, so a merge updates one row of the similarity matrix."""
    n = len(vectors)
    if n == 0:
        return []
    unit = np.asarray(vectors, dtype=np.float32).reshape(n, -1)
    unit = unit / np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    sums, sizes = unit.copy(), np.ones(n, dtype=np.float32)
    similar = unit @ unit.T
    np.fill_diagonal(similar, -np.inf)
    members: list[list[int]] = [[i] for i in range(n)]
    gone = np.zeros(n, dtype=bool)
    while n > 1:
        i, j = divmod(int(np.argmax(similar)), n)
        if similar[i, j] < threshold:
            break
        sums[i] += sums[j]
        sizes[i] += sizes[j]
        members[i], members[j] = members[i] + members[j], []
        gone[j] = True
        row = (sums @ sums[i]) / (sizes * sizes[i])
        row[gone] = -np.inf
        row[i] = -np.inf
        similar[i, :], similar[:, i] = row, row
        similar[j, :], similar[:, j] = -np.inf, -np.inf
    return [sorted(group) for group in members if group]


def _visible(items: list[Any], level: Level) -> list[Any]:
    return [item for item in items if item.context <= level]


class GapFinder:
    """Builds reports from the answer log and the index; question vectors are kept for its life
    (one digest run builds a report per reader level from the same questions)."""

    def __init__(self, db: StateDB, engine: Engine, config: GapsConfig) -> None:
        self.log = GapLog(db)
        self.engine = engine
        self.config = config
        self._vectors: dict[str, np.ndarray] = {}

    async def report(self, level: Level, since_ms: int, until_ms: int, reader: Reader) -> Report:
        """The report of [since_ms, until_ms) at `level`, in the words `reader` may read."""
        unanswered: list[Unanswered] = _visible(await self.log.unanswered(since_ms, until_ms), level)[-MAX_GROUPED:]
        downvotes: list[Downvote] = _visible(await self.log.downvotes(since_ms, until_ms), level)
        relied_since = until_ms - RELIED_ON_DAYS * DAY_MS
        cited: list[Cited] = _visible(await self.log.cited(min(since_ms, relied_since), until_ms), level)
        store = self.engine.store
        ownership = index_ownership(await asyncio.to_thread(store.meta))
        vectors = await self._embed([u.question for u in unanswered])
        groups = await asyncio.to_thread(group_by_meaning, vectors)
        closest = [await self._closest([unanswered[i] for i in g], vectors[g]) for g in groups]
        recent = [c for c in cited if c.created_ms >= since_ms and c.doc_paths]
        relied = Counter(path for c in cited if c.created_ms >= relied_since for path in c.doc_paths)
        paths = {*closest, *(d.doc_path for d in downvotes), *relied, *(c.doc_paths[0] for c in recent)} - {""}
        pages = await asyncio.to_thread(self._pages, paths, level, ownership)
        gaps = [self._gap([unanswered[i] for i in g], vectors[g], pages.get(path), reader)
                for g, path in zip(groups, closest)]
        gaps.sort(key=lambda g: (-g.count, -g.last_ms))
        same = await self.log.public_askers(since_ms, until_ms) if downvotes and reader.several > 1 else {}
        complaints = self._complaints(sorted(downvotes, key=lambda d: -d.created_ms), pages, reader, same)
        areas: dict[str, tuple[int, int]] = {}
        for c in recent:
            answered, missed = areas.get(area := area_of(pages.get(c.doc_paths[0])), (0, 0))
            areas[area] = (answered + 1, missed)
        for gap in gaps:
            answered, missed = areas.get(area := area_of(gap.page), (0, 0))
            areas[area] = (answered, missed + gap.count)
        return Report(since_ms, until_ms, level, tuple(gaps[:TOP]), tuple(complaints[:TOP]),
                      tuple(self._overdue(pages, relied, until_ms)[:TOP]), areas)

    async def _embed(self, texts: Sequence[str]) -> np.ndarray:
        missing = sorted({t for t in texts if t not in self._vectors})
        if missing:
            fresh = await asyncio.to_thread(self.engine.embedder.embed, missing)
            self._vectors.update(zip(missing, np.asarray(fresh, dtype=np.float32)))
        dim = self.engine.embedder.dim
        return np.stack([self._vectors[t] for t in texts]) if texts else np.zeros((0, dim), np.float32)

    async def _closest(self, items: list[Unanswered], vectors: np.ndarray) -> str:
        logged = Counter(item.doc_path for item in items if item.doc_path)
        if logged:
            return logged.most_common(1)[0][0]
        try:
            hits = await self.engine.store.dense(vectors.mean(axis=0), int(Level.public), 1)
        except StoreError:  # no index to search (yet): the group has no page
            return ""
        return hits[0].row["doc_path"] if hits and hits[0].score >= ASSIGN_FLOOR else ""

    def _gap(self, items: list[Unanswered], vectors: np.ndarray, page: Page | None, reader: Reader) -> Gap:
        shown = {item.answer_id for item in quoted(reader, items)}
        nearest = np.argsort(-(vectors @ vectors.mean(axis=0)), kind="stable")
        example = next((items[i].question for i in nearest if items[i].answer_id in shown), "")
        kinds = Counter(item.kind for item in items)
        return Gap(example, len(items), dict(sorted(kinds.items())), page, max(i.created_ms for i in items),
                   self._askers(i for i in items if i.answer_id in shown), len(items) - len(shown))

    def _complaints(self, downvotes: list[Downvote], pages: dict[str, Page], reader: Reader,
                    same: dict[str, set[str]]) -> list[Complaint]:
        """One line per 👎'd answer the reader may read; the others as a count per page and reason.
        The expected answer is shown with its question only when the question is public to all
        (or the reader wrote it): it is a voter's own words."""
        anyone = replace(reader, user="")
        found: dict[Any, Complaint] = {}
        for d in downvotes:
            page, askers = pages.get(d.doc_path), same.get(question_key(d.question), set())
            if quoted(reader, [d], askers):
                mine = d.expected_by == reader.user != ""
                expected = d.expected if quoted(anyone, [d], askers) or mine else ""
                found[d.answer_id] = Complaint(d.question, d.reason, expected, d.voters, page, self._askers([d]))
            elif (before := found.get(key := (d.doc_path, d.reason))) is None:
                found[key] = Complaint("", d.reason, "", d.voters, page)
            else:
                found[key] = replace(before, voters=before.voters + d.voters, answers=before.answers + 1)
        return list(found.values())

    def _askers(self, items: Iterable[Unanswered | Downvote]) -> tuple[str, ...]:
        return tuple(dict.fromkeys(item.asker for item in items if item.asker)) if self.config.name_askers else ()

    def _pages(self, paths: Iterable[str], level: Level, ownership: Owners) -> dict[str, Page]:
        """The first chunk of each document the reader may see, as its page."""
        first: dict[str, dict[str, Any]] = {}
        columns = ("title", "area", "url", "access_rank", "commit_date", "reviewed", "review_days", "status", "ordinal")
        for row in self.engine.store.chunk_columns(paths, *columns):
            best = first.get(row["doc_path"])
            if row["access_rank"] <= int(level) and (best is None or row["ordinal"] < best["ordinal"]):
                first[row["doc_path"]] = row
        return {path: Page(path, row["title"], row["area"] or "", (row["url"] or "").split("#")[0],
                           tuple(ownership.owners_for(path)), row["commit_date"] or "", row["reviewed"],
                           row["review_days"], row["status"])
                for path, row in first.items()}

    async def overdue_total(self, now_ms: int) -> int:
        """Indexed pages overdue for review, whether answers cite them or not (a metric)."""
        now = _instant(now_ms)
        dates = await asyncio.to_thread(self.engine.store.doc_columns, "reviewed", "commit_date", "review_days",
                                        "status")
        reviews = (review_of(reviewed, commit_date or "", days, self.config.review_days, status)
                   for reviewed, commit_date, days, status in dates.values())
        return sum(review is not None and review.days_overdue(now) is not None for review in reviews)

    def _overdue(self, pages: dict[str, Page], relied: Counter[str], until_ms: int) -> list[Overdue]:
        found = []
        for path, citations in relied.most_common():
            page = pages.get(path)
            review = page.review(self.config.review_days) if page else None
            days = review.days_overdue(_instant(until_ms)) if review else None
            if page is not None and days is not None:
                found.append(Overdue(page, citations, days))
        return sorted(found, key=lambda o: (-o.citations, -o.days_overdue))


def _instant(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, timezone.utc)
