"""The embedded answerer: quotes the spans of the sources that answer the question, no model.

The chunks of one section are put back together (in document order, their overlap removed) and
read as units (rag/spans.py). Units are scored as before: the (rare) question words they share,
by stem and synonym, with themselves and, at half weight, with their headings, a bonus when they
hold the kind of answer asked for and when a number in the question fits a bound they state, all
scaled by how close their page is to the question. The answer is then built from the best unit's
section as one contiguous span, widened to whole blocks (rag/procedures.py), and a second span
from another section when it scores nearly as well; see `ExtractiveAnswerer`.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from rag.followup import focus, heuristic_query
from rag.kinds import fits_kind, lacks_value, thread_kind
from rag.procedures import (Picked, Quote, Section, acting, action_weights, choose_span, cut, number_fit, prerequisites,
                            qualifier, qualifying, render, runbook_weights)
from rag.prompt import DECLINE_MARKER, Source
from rag.spans import parse, resolve_links
from rag.steps import next_command, step_quotes
from rag.terms import content_terms, identifier_words, matched_terms, question_terms


def gather(sources: list[Source]) -> list[Section]:
    """The sources' sections, each put together from its chunks in document order (the overlap a
    chunk repeats from the one before it removed), cited by the lowest source number."""
    groups: dict[tuple[str, str], list[Source]] = {}
    for s in sources:
        groups.setdefault((s.doc or s.title, s.section), []).append(s)
    sections: list[Section] = []
    for (doc, path), members in groups.items():
        members.sort(key=lambda s: s.ordinal)
        runs: list[str] = []
        last = None
        for s in members:
            if runs and last is not None and s.ordinal == last + 1:
                runs[-1] = _join(runs[-1], s.text)
            else:
                runs.append(s.text)
            last = s.ordinal
        first = members[0]
        sections.append(Section(doc, first.title, path, min(s.n for s in members),
                                max(s.page_similarity for s in members), [parse(run) for run in runs], first.ordinal))
    links: dict[str, dict[str, str]] = {}  # a page's reference links are often defined at its end
    for section in sections:
        for parsed in section.runs:
            links.setdefault(section.doc, {}).update(parsed.links)
    for section in sections:
        for parsed in section.runs:
            for unit in parsed.units:
                unit.text = resolve_links(unit.text, links[section.doc])
    return sections


# What a follow-up's unit that names none of the follow-up's own new terms, on a page that names
# one, keeps of its score: it answers the thread's previous question, however many of the thread's
# words it shares ("and if it's critical?" after the deadline of a high-severity one: not
# "High-severity ... 10 business days" but "Critical: 3 business days"; issue 50 item 5). Another
# page that names none keeps its score: whether a page is on the thread's subject is retrieval's
# call, and a page that merely names the new object is not preferred to it.
SUBJECT_ONLY_SHARE = 0.3


@dataclass(frozen=True)
class Asked:
    """What a question asks: its kind (a follow-up's, its thread's when it names none), the words
    it asks about (a follow-up's with its thread's), and the follow-up's own new ones
    (rag/followup.focus; none for a question that does not refer back)."""

    kind: str | None
    terms: set[str]
    new: frozenset[str]

    def share(self, held: set[str], page: set[str]) -> float:
        """What a unit's score keeps when these are the asked terms it and its headings hold, and
        those its page's sources hold."""
        return SUBJECT_ONLY_SHARE if self.new & page and not held & self.new else 1.0


def _asked(question: str, history: Sequence[tuple[str, str]]) -> Asked:
    kind = thread_kind(question, history)
    asked = set(content_terms(heuristic_query(question, list(history))))
    if kind == "reason":  # "why did we choose X": the choice is given, its reason is asked
        asked.discard("decide")
    return Asked(kind, asked, focus(question, list(history)).new)


def _named_verb_first(scored: list[Picked], actions: dict[int, float]) -> list[Picked]:
    """A section whose heading names the asked verb ("how do I scale it out?" → "Scale out") is
    chosen first within its page, but never lifted over another page: its score rises at most
    to just above its page's best ("how do I authenticate with a client certificate?" is not
    answered by the Authentication page because of the verb)."""
    best: dict[str, float] = {}
    for p in scored:
        best[p.section.doc] = max(best.get(p.section.doc, 0.0), p.score)
    return [replace(p, score=min(p.score * w, best[p.section.doc] * (1 + 1e-9)))
            if (w := actions.get(id(p.section), 1.0)) != 1.0 else p for p in scored]


def _words(text: str) -> set[str]:
    """Content words, an identifier in camel case also as its words ("etcdMembersDown",
    "queryOptions"): what a span covers, never what lifts it."""
    return set(content_terms(text)) | set(content_terms(identifier_words(text, min_words=2)))


def _heading_terms(asked: set[str], heading: str) -> set[str]:
    """The asked terms a heading names, an identifier's words too ("etcd members are down" names
    etcdMembersDown), these exactly: by prefix, "kube" of KubeVirt would name anything Kube*."""
    return matched_terms(asked, set(content_terms(heading))) | (asked & set(content_terms(identifier_words(heading))))


def _covered(terms: set[str], words: set[str]) -> set[str]:
    """The terms the words contain, by stem and prefix, or by their first six letters
    ("diagnose" and "diagnosis")."""
    stems = {w[:6] for w in words if len(w) >= 6}
    return matched_terms(terms, words) | {t for t in terms if len(t) >= 6 and t[:6] in stems}


def weak(question: str, asked: set[str], vocabulary: set[str], span: str) -> bool:
    """Whether a span (with its headings) lacks the question's key terms: all of them, or any
    of one or two. A term that no source contains is left out: whether the sources answer at all
    was the answerability gate's call, the span is judged against the other sources."""
    key = question_terms(question) & asked
    missing = key - _covered(key, _words(span))
    if not missing:
        return False
    elsewhere = _covered(missing, vocabulary)
    needed = len(key) - len(missing - elsewhere)
    lacking = len(missing & elsewhere)
    return needed > 0 and (lacking == needed or needed <= 2 and lacking > 0)


def _join(previous: str, text: str) -> str:
    """Two consecutive chunks as one text: a chunk starts with up to `overlap` characters of the
    previous one's prose, then a blank line."""
    cut = 0
    for match in re.finditer(r"\n\n", text[:2000]):
        if previous.endswith(text[: match.start()]):
            cut = match.end()
    return previous + "\n\n" + text[cut:]


@dataclass
class ExtractiveAnswerer:
    """The embedded default generator. Whether the sources answer at all was decided before (the
    engine's calibrated answerability gate); it declines when no unit shares a word with the
    question, and when the best span lacks the question's key terms (see `weak`)."""

    max_passages: int = 3
    max_chars: int = 700  # a span of prose
    procedure_chars: int = 1200  # a procedure, a table: cut at a step or row boundary beyond it
    kind_bonus: float = 1.0
    near_share: float = 0.8  # a quote lacking what was asked: the next unit scoring this share of the best is tried
    max_tries: int = 3
    name: str = "extractive"
    reads_spans: bool = False  # it chooses its spans from the chunks

    async def generate(self, question: str, sources: list[Source], history: list[tuple[str, str]],
                       on_text: Callable[[str], Awaitable[None]] | None = None) -> str:
        """Never streams: the quotes are known at once, so `on_text` is not called."""
        return self.answer(question, sources, history)

    def answer(self, question: str, sources: list[Source], history: Sequence[tuple[str, str]] = ()) -> str:
        """The answer text, or DECLINE_MARKER (with the near miss) when the sources do not answer.

        A quote that lacks what was asked (the value of a "how long" or "how much", see
        `lacks_value`; the question's key terms, see `weak`) is not yet an answer: the next unit
        that scores near the best is tried, and when none holds it the answer declines, naming
        the best one."""
        found = self._tried(question, sources, history)
        if found is None:
            return DECLINE_MARKER
        quotes, sure, closest = found
        return render(quotes) if sure else f"{DECLINE_MARKER} (closest: {closest})"

    def closest(self, question: str, sources: list[Source], history: Sequence[tuple[str, str]] = ()) -> str:
        """The passage `answer` would quote, or the closest one when it would decline (the first
        tried that holds the kind of value asked, else the best unit's): what a not-sure reply
        shows. DECLINE_MARKER only when no unit shares a word with the question."""
        found = self._tried(question, sources, history)
        return DECLINE_MARKER if found is None else render(found[0])

    def _tried(self, question: str, sources: list[Source],
               history: Sequence[tuple[str, str]]) -> tuple[list[Quote], bool, str] | None:
        """(the quotes, whether they answer, the best section's name); None when no unit shares a
        word with the question."""
        wanted = _asked(question, history)
        kind, asked = wanted.kind, wanted.terms
        sections = gather(sources)
        scored, vocabulary = self._score(question, wanted, sections)
        if not scored:
            return None
        near = [p for p in scored if p.score >= self.near_share * scored[0].score][:self.max_tries]
        tried: list[tuple[list[Quote], bool]] = []
        for best in near:
            quotes, first = self._quotes(best, scored, sections, kind, asked, question)
            heard = f"{best.section.title} {best.section.path} {best.unit.text} {first.text}"
            lacks = lacks_value(kind, first.text)
            if not lacks and not weak(question, asked, vocabulary, heard):
                return quotes, True, ""
            tried.append((quotes, lacks))
        quotes = next((q for q, lacks in tried if not lacks), tried[0][0])
        return quotes, False, f"{scored[0].section.title} › {scored[0].section.path}"

    def _quotes(self, best: Picked, scored: list[Picked], sections: list[Section], kind: str | None,
                asked: set[str], question: str) -> tuple[list[Quote], Quote]:
        """The quotes of an answer from `best`, and the one from its section."""
        acts = acting(kind, question)
        quotes = step_quotes(best, sections, asked, question, self.procedure_chars) if acts else None
        if quotes is None:
            quotes = [self._span(best, scored, acts, asked, question)]
            other = next((p for p in scored[:self.max_passages] if p.section is not best.section
                          and p.score >= 0.8 * best.score
                          and (p.terms - best.terms or p.section.doc != best.section.doc)),
                         None)  # another page, or a term the best unit lacks
            if other is not None:  # in document order when both are on one page
                earlier = other.section.doc == best.section.doc and other.section.ordinal < best.section.ordinal
                quotes.insert(0 if earlier else 1, self._span(other, scored, acts, asked, question))
        if acts and (then := next_command(quotes, sections, self.procedure_chars)) is not None:
            quotes.append(then)
        if (extra := qualifier(quotes, sections, asked, self.max_chars)) is not None:
            quotes.append(extra)
        if acts:  # named, first: "First: see Break-Glass › Who approves"
            quotes[:0] = [Quote(s, f"First: see {s.title} › {s.path}") for s in prerequisites(quotes, sections)]
        return quotes, next((q for q in quotes if q.section is best.section), quotes[0])

    def spans(self, question: str, sources: list[Source],
              history: Sequence[tuple[str, str]] = ()) -> tuple[list[list[Quote]], list[Section]]:
        """What it would quote from each section were it the best: its span (a procedure whole,
        a table with its header; with a "Step n" page's other steps in order; all of the section
        when that fits `max_chars`: nothing to cut, nothing left out), the sections before a
        procedure that say what must hold first, and the section that qualifies a rule it
        states, whole. Groups come best first, each section in one; also
        returned: the sections none of them quotes (no unit shares a question word)."""
        wanted = _asked(question, history)
        kind, asked = wanted.kind, wanted.terms
        sections = gather(sources)
        scored, _ = self._score(question, wanted, sections)
        acts = acting(kind, question)
        groups: list[list[Quote]] = []
        quoted: set[int] = set()
        for best in scored:
            if id(best.section) in quoted:
                continue
            steps = step_quotes(best, sections, asked, question, self.procedure_chars) if acts else None
            whole = cut(best.section, best.section.runs[best.run].units, self.max_chars)
            span = whole if not whole.note else self._span(best, scored, acts, asked, question)
            quotes = [q for q in steps or [] if id(q.section) not in quoted]
            if not any(q.section is best.section for q in quotes):  # e.g. the option a step's quote left out
                quotes = [span]
            if acts:  # the conditions the doc puts first, whole: a model reads them before the steps
                quotes[:0] = [cut(s, s.runs[0].units, self.max_chars)
                              for s in prerequisites(quotes, sections) if id(s) not in quoted]
            if (found := qualifying(quotes, sections)) is not None and id(found[1]) not in quoted:
                rule = cut(found[1], found[1].runs[0].units, self.max_chars)
                rule.label = f"*{found[1].own}:*"
                quotes.append(rule)
            quoted |= {id(q.section) for q in quotes}
            groups.append(quotes)
        return groups, [s for s in sections if id(s) not in quoted]

    def _span(self, best: Picked, scored: list[Picked], acts: bool, asked: set[str], question: str) -> Quote:
        return choose_span(best, [p for p in scored if p.section is best.section], acts, asked, question,
                           self.max_passages, self.max_chars, self.procedure_chars)

    def _score(self, question: str, wanted: Asked, sections: list[Section]) -> tuple[list[Picked], set[str]]:
        """Every unit that shares a question word, best first (ties: document order), and the
        words of all the sources (their headings too). A follow-up's unit that names none of its
        own new terms (a table row: none of its table's rows does) on a page that names one keeps
        SUBJECT_ONLY_SHARE of its score (`Asked.share`)."""
        kind, asked = wanted.kind, wanted.terms
        candidates = []
        vocabulary: set[str] = set()
        tables: dict[tuple[int, int, int], set[str]] = {}  # the asked terms of a table's rows, by section, run, block
        pages: dict[str, set[str]] = {}  # the asked terms of a page's sources, headings too
        for section in sections:
            vocabulary |= _words(f"{section.title} {section.path}")
            outer, _, own = section.path.rpartition(" › ")
            title_terms = _heading_terms(asked, section.title)
            own_terms = _heading_terms(asked, own)
            outer_terms = _heading_terms(asked, outer)
            for run, parsed in enumerate(section.runs):
                for index, unit in enumerate(parsed.units):
                    words = set(content_terms(unit.text))
                    vocabulary |= words
                    mine = matched_terms(asked, words)
                    candidates.append((section, run, index, mine, mine | title_terms, own_terms, outer_terms))
                    if unit.kind == "row":
                        tables.setdefault((id(section), run, unit.block), set()).update(mine)
                    pages.setdefault(section.doc, set()).update(mine | title_terms | own_terms | outer_terms)
        df = Counter(t for c in candidates for t in c[4] | c[5])
        idf = {t: math.log(1 + len(candidates) / df[t]) for t in df}
        top = max((s.similarity for s in sections), default=0.0)
        weights = runbook_weights(question, sections)
        actions = action_weights(question, sections)
        scored = []
        for order, (section, run, index, mine, overlap, own_terms, outer_terms) in enumerate(candidates):
            if not overlap and not own_terms and not outer_terms:
                continue
            unit = section.runs[run].units[index]
            # fsum: exact, so the same in any order (a set's order varies between processes, and a
            # float sum in another order could break a tie the other way on another replica)
            relevance = math.fsum(idf[t] for t in overlap | own_terms)
            relevance += 0.5 * math.fsum(idf.get(t, 1.0) for t in outer_terms - overlap - own_terms) + 0.5 / section.n
            # a row is quoted by the row its key names (procedures.table_quote): it names what its table's rows do
            table = tables.get((id(section), run, unit.block), set()) if unit.kind == "row" else set()
            relevance *= wanted.share(overlap | own_terms | outer_terms | table, pages[section.doc])
            if top > 0:  # a page far less similar to the question than the best one weighs less
                relevance *= (max(section.similarity, 0.0) / top) ** 0.5
            relevance *= weights.get(id(section), 1.0)
            # a reason given in the passage counts when the passage is about what was asked (not only
            # its page): "because of its volume" in an ADR's list of settings is not why it was chosen
            fit = fits_kind(kind, section.path, unit.text if mine or kind != "reason" else "")
            bonus = self.kind_bonus * fit + 0.5 * number_fit(question, unit.text)
            scored.append(Picked(relevance * (1 + bonus), order, section, run, index, frozenset(overlap | own_terms)))
        scored = _named_verb_first(scored, actions)
        scored.sort(key=lambda p: (-p.score, p.order))
        return scored, vocabulary
