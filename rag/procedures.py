"""Spans of a section that a person can act on: contiguous units widened to whole blocks.

- A lead-in ("via the following command:") comes with what it introduces, and a code block or a
  list with its lead-in; a note right after the span (Note, Warning, Unless) comes with it.
- For "how do I" and runbook action questions, a procedure is quoted whole up to a budget: a
  numbered list, a list whose items carry code, or a run of code blocks with their lead-ins (a
  procedure over several sections, "Step n" ones, is rag/steps.py's). When it must be cut, it is
  cut at a step boundary and says which steps are left ("… (steps 5–7 in the doc)"), the citation
  being the link. Code blocks are never cut; one whose closing fence is missing from the sources
  is not quoted.
- A table answers by row (the question names a row's key: its first cell, or a number that fits
  a bound a row states) or whole (it asks about the table: its first rows, and how many more).
- A rule comes with the sections of its page that qualify it (Exceptions, Caveats, ...): quoted
  where they share the question's words, else named.
- Runbook sections (the openshift/runbooks convention: Meaning, Impact, Diagnosis, Mitigation)
  answer the kinds of question they are for.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rag.kinds import asks_yes_no, lacks_value, question_kind
from rag.spans import NUMBERED, Parsed, Table, Unit, is_code, row_text, table_text
from rag.terms import content_terms, matched_terms, question_terms

_QUALIFIER = re.compile(r"\b(exceptions?|caveats?|limitations?|warnings?|notes?|unless|requires? approval)\b", re.I)
# Sections that say what must hold, or who must agree, before a procedure is followed.
_PREREQUISITE = re.compile(r"\b(?:prerequisites?|requirements|before you (?:begin|start)|who (?:approves|can|may)|"
                           r"approvals?|eligib\w*|when\b.*\b(?:allowed|permitted))\b", re.I)
_RULE = re.compile(r"\b(?:no|not|never|must|only|allowed|requires?|needs?|forbidden|cannot|may)\b", re.I)
# Runbook sections and the questions they answer (the openshift/runbooks convention).
RUNBOOK_KINDS = (
    ("mitigation", re.compile(r"\bwhat (?:should|do|can) (?:i|we) do\b"
                              r"|\bhow (?:do|can|should) (?:i|we) (?:fix|resolve|mitigate|"
                              r"solve|recover|free|clean|stop|handle|get rid)\b"
                              r"|\b(?:fix|resolve|mitigate|remedy)\b", re.I)),
    ("diagnosis", re.compile(r"\bdebug|\bdiagnos|\binvestigat|\btroubleshoot|\bwhich logs\b|\broot cause\b"
                             r"|\bhow do i check\b", re.I)),
    ("meaning", re.compile(r"\bwhat does\b.*\bmean\b|\bmeaning\b|\bwhat is (?:the )?alert\b", re.I)),
    ("impact", re.compile(r"\bimpact\b|\bwhat happens\b|\baffect", re.I)),
)
_ACTION = re.compile(r"\bhow (?:do|can|should|would) (?:i|we|you) ([a-z][\w-]*)|\bhow to ([a-z][\w-]*)", re.I)
_UNDOING = ("de", "re", "un", "dis")  # "defragment" is done in "Fragmented state", "reinstall" in "Install"
_NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
_OVER = re.compile(rf"\b(?:over|above|more than|greater than|exceeding)\s*[€$£]?\s*{_NUMBER}|>\s*[€$£]?{_NUMBER}", re.I)
_UNDER = re.compile(rf"\b(?:up to|under|below|less than|at most|max(?:imum)?)\s*[€$£]?\s*{_NUMBER}"
                    rf"|<\s*[€$£]?{_NUMBER}", re.I)
_RANGE = re.compile(rf"[€$£]?{_NUMBER}\s*(?:[-–]|to)\s*[€$£]?{_NUMBER}")


@dataclass
class Section:
    doc: str
    title: str
    path: str  # heading path below the title
    n: int  # the source number it is cited by
    similarity: float  # its page's similarity to the question
    runs: list[Parsed]  # its text, one parse per run of consecutive chunks
    ordinal: int = 0  # position of its first chunk in the document

    @property
    def own(self) -> str:
        return self.path.rpartition(" › ")[2]


@dataclass(frozen=True)
class Picked:
    score: float
    order: int
    section: Section
    run: int
    index: int
    terms: frozenset[str] = frozenset()  # the question terms it matched

    @property
    def unit(self) -> Unit:
        return self.section.runs[self.run].units[self.index]


@dataclass
class Quote:
    section: Section
    text: str
    note: str = ""  # what was left out: "… (steps 5–7 in the doc)"
    label: str = ""  # a line before it: the step's heading


def number_fit(question: str, passage: str) -> int:
    """+1 when a number in the question falls in a bound or range the passage states, -1 when
    the passage states bounds and none fits, 0 when it states none (e.g. "3000 euros" against
    "Over €2,500")."""
    asked = [float(n.replace(",", "")) for n in re.findall(rf"(?<![\w.]){_NUMBER}", question) if n.replace(",", "")]
    if not asked:
        return 0
    bounds = [(float((a or b).replace(",", "")), math.inf) for a, b in _OVER.findall(passage)]
    bounds += [(-math.inf, float((a or b).replace(",", ""))) for a, b in _UNDER.findall(passage)]
    bounds += [(float(a.replace(",", "")), float(b.replace(",", ""))) for a, b in _RANGE.findall(passage)]
    if not bounds:
        return 0
    return 1 if any(lo <= n <= hi for n in asked for lo, hi in bounds) else -1


def runbook_kind(question: str) -> str | None:
    return next((name for name, pattern in RUNBOOK_KINDS if pattern.search(question)), None)


def runbook_section(path: str) -> str | None:
    """meaning, impact, diagnosis or mitigation: the runbook section a heading path is in."""
    for part in path.lower().split(" › "):
        for name, _ in RUNBOOK_KINDS:
            if part.strip().startswith(name):
                return name
    return None


def wanted_sections(question: str) -> set[str]:
    """The runbook sections that answer a question ("how do I ...": Diagnosis or Mitigation)."""
    kind = runbook_kind(question)
    return {kind} if kind else {"diagnosis", "mitigation"} if acting(question_kind(question), question) else set()


def runbook_weights(question: str, sections: list[Section]) -> dict[int, float]:
    """By id of section: on a page that has the runbook section this kind of question asks for
    ("what should I do" → Mitigation), that section weighs double and its other runbook
    sections (Meaning, Impact, ...) a third; any "how do I" asks for Diagnosis or Mitigation."""
    wanted = wanted_sections(question)
    pages = {s.doc for s in sections if runbook_section(s.path) in wanted}
    return {id(s): 2.0 if name in wanted else 0.3 for s in sections
            if s.doc in pages and (name := runbook_section(s.path)) is not None}


def action_weights(question: str, sections: list[Section]) -> dict[int, float]:
    """By id of section: a "how do I <verb> ..." question is answered first by a section whose
    own heading names that verb ("how do I scale it out?" → "Scale out", "how do I defragment
    ...?" → "Defrag"), or what it undoes or redoes ("Fragmented state", "Install"), which weighs
    double, over one that only shares the question's nouns."""
    match = _ACTION.search(question)
    verb = set(content_terms(match.group(1) or match.group(2))) if match else set()
    verb |= {v[len(p):] for v in verb for p in _UNDOING if v.startswith(p) and len(v) - len(p) >= 5}
    return {id(s): 2.0 for s in sections if verb and matched_terms(verb, set(content_terms(s.own)))}


def acting(kind: str | None, question: str) -> bool:
    """Whether the question asks for something to do: steps, a mitigation, a diagnosis."""
    return kind == "steps" or runbook_kind(question) in ("mitigation", "diagnosis")


def has_code(unit: Unit) -> bool:
    return unit.kind == "code" or "\n```" in unit.text or "\n~~~" in unit.text


def _block_range(units: list[Unit], i: int) -> tuple[int, int]:
    lo = hi = i
    while lo > 0 and units[lo - 1].block == units[i].block:
        lo -= 1
    while hi + 1 < len(units) and units[hi + 1].block == units[i].block:
        hi += 1
    return lo, hi


def procedure_range(parsed: Parsed, i: int) -> tuple[int, int] | None:
    """The procedure unit `i` belongs to: its list when numbered or carrying code, else the run
    of code blocks of the section when it has two or more; None when it is in none."""
    units = parsed.units
    unit = units[i]
    if unit.kind == "item":
        lo, hi = _block_range(units, i)
        if hi > lo and (unit.block in parsed.numbered or any(has_code(u) for u in units[lo:hi + 1])):
            return lo, hi
    code = [j for j, u in enumerate(units) if has_code(u)]
    if len(code) >= 2 and code[0] - 1 <= i <= code[-1] + 1:
        return code[0], code[-1]
    return None


def widen(units: list[Unit], lo: int, hi: int) -> tuple[int, int]:
    """Lead-ins with what they introduce (and the other way round), lists whole from an item
    that introduces nested ones, a note right after the span."""
    while lo > 0 and units[lo - 1].lead_in and units[lo - 1].block != units[lo].block:
        lo -= 1
    if units[lo].kind == "row":
        lo = _block_range(units, lo)[0]
    while (any(u.lead_in for u in units[lo:hi + 1])
           and (last := max(i for i in range(lo, hi + 1) if units[i].lead_in)) + 1 < len(units)
           and _block_range(units, last + 1)[1] > hi):
        hi = _block_range(units, last + 1)[1]  # what a lead-in in the span introduces, whole
    if hi + 1 < len(units) and units[hi + 1].kind == "note":
        hi += 1
    return lo, hi


SHORT_SENTENCE = 200  # characters
# A unit this short rarely holds the whole answer ("You should report SLOs over a set period of
# time.": the next sentence names the window): it is quoted with a neighbour that also scores, as
# long as the two stay within NEIGHBOUR_CHARS. Measured on every dev set, left out by set: +2 facts.
SHORT_UNIT = 80
NEIGHBOUR_CHARS = 250
# A yes/no is answered with its condition or its figure ("up to $200/month", "joined within 6
# months"): when the best unit states neither, the unit beside it (the next first) that does and
# that the question's words reach comes with it, within NEIGHBOUR_CHARS. Measured on every dev set:
# +2 facts; any unit within two, reached or not, holds no more facts and lengthens mtrag-govt 1.08x.
CONDITION = re.compile(r"\b(?:if|unless|only|except|within|up to|at most|at least|as long as|provided|when|before|"
                       r"after|until)\b", re.I)


def qualifies(text: str) -> bool:
    """Whether a unit states a condition or a figure of its own (not the digits of "37signals")."""
    return bool(CONDITION.search(text)) or not lacks_value("amount", text)


def code_after(units: list[Unit], lo: int, hi: int, reach: int = 3) -> int | None:
    """The code block that completes a how-to told in prose: the first one within `reach` units
    after the span, with only prose between ("For large downloads ... use streaming responses."
    is answered by the `httpx.stream(...)` below it); None when the span already shows code."""
    if any(has_code(u) for u in units[lo:hi + 1]):
        return None
    for j in range(hi + 1, min(hi + 1 + reach, len(units))):
        if has_code(units[j]):
            return j if units[j].complete else None
        if units[j].kind != "prose":
            return None
    return None


def _join(units: list[Unit], bold: Unit | None = None) -> str:
    """Sentences of one paragraph joined by a space, every other unit on its own line; `bold`'s
    text in bold."""
    text = ""
    for previous, unit in zip([None, *units], units):
        same = previous is not None and previous.block == unit.block and previous.kind == unit.kind == "prose"
        text += (" " if same else "\n" if text else "") + (f"**{unit.text}**" if unit is bold else unit.text)
    return text


_EMPHASIS = re.compile(r"[*_`]|\[")


def emphasis(units: list[Unit], best: Unit) -> Unit | None:
    """The sentence to set in bold in a passage: the one that answers, when other sentences
    surround it and it has no markup of its own that bold would break (emphasis, code, a link)."""
    plain = best.kind == "prose" and not _EMPHASIS.search(best.text)
    return best if plain and len(units) > 1 and any(u is best for u in units) else None


def cut(section: Section, units: list[Unit], budget: int, answering: Unit | None = None) -> Quote:
    """The units that fit the budget (at least the first), stopping before a code block that is
    not complete; a lead-in left without what it introduced is dropped; what is left is named.
    `answering`: the sentence that answers, set in bold when others surround it (`emphasis`)."""
    kept: list[Unit] = []
    used = 0
    for unit in units:
        if not unit.complete or (kept and used + len(unit.text) > budget):
            break
        kept.append(unit)
        used += len(unit.text) + 1
    while kept and kept[-1].lead_in and len(kept) < len(units):
        kept.pop()
    left = units[len(kept):]
    steps = [u.step for u in left if u.step]
    note = ""
    if steps:
        note = f"… (step {steps[0]} in the doc)" if len(steps) == 1 else f"… (steps {steps[0]}–{steps[-1]} in the doc)"
    elif left:
        note = "… (more in the doc)"
    return Quote(section, _join(kept, emphasis(kept, answering) if answering else None), note)


def _reach(units: list[Unit], span: tuple[int, int], index: int, limit: int) -> tuple[int, int]:
    """The span widened (see `widen`) to take in unit `index`, when it stays within `limit`
    characters; else the span as it was."""
    wider = widen(units, min(span[0], index), max(span[1], index))
    return wider if len(_join(units[wider[0]:wider[1] + 1])) <= limit else span


# A sentence is quoted with the sentences of its paragraph around it (the next first) while the
# passage stays within PASSAGE_CHARS, and a sentence that points at what follows ("Below are the
# accounts to remove", "as follows") with the unit it points at (issue 50 item 2). Offline replay
# of the dev suite's sources: facts shown 0.611 -> 0.623 (macro of the 14 sets with facts), held
# 0.655 -> 0.667, the longest set's prose words p50 58 -> 69 (budget 70) and p90 139 -> 139.
PASSAGE_CHARS = 300
POINTS_ON = re.compile(r"\b(?:below|the following|as follows)\b", re.I)


def passage(units: list[Unit], lo: int, hi: int, limit: int) -> tuple[int, int]:
    """The span with its paragraph's neighbouring sentences, and what its last unit points at."""
    grew = True
    while grew:
        grew = False
        for j, edge in ((hi + 1, hi), (lo - 1, lo)):
            if 0 <= j < len(units) and units[j].kind == "prose" and units[j].block == units[edge].block:
                wider = (min(lo, j), max(hi, j))
                if len(_join(units[wider[0]:wider[1] + 1])) <= limit:
                    (lo, hi), grew = wider, True
    if hi + 1 < len(units) and POINTS_ON.search(units[hi].text) and units[hi + 1].kind in ("prose", "item"):
        hi = _reach(units, (lo, hi), hi + 1, 2 * max(limit, NEIGHBOUR_CHARS))[1]
    return lo, hi


def choose_span(best: Picked, picks: list[Picked], acts: bool, asked: set[str], question: str,
                max_passages: int, max_chars: int, procedure_chars: int) -> Quote:
    """The span of `best`'s section (picks: that section's scored units, best first)."""
    section, parsed = best.section, best.section.runs[best.run]
    units = parsed.units
    if best.unit.kind == "row":
        return table_quote(best, picks, asked, question, procedure_chars)
    span = (best.index, best.index)
    for p in [p for p in picks if p.run == best.run and p.score >= 0.8 * best.score][1:]:
        span = _reach(units, span, p.index, max_chars)  # still one short span
    reached = {p.index for p in picks if p.run == best.run}  # the units that share a question word
    if len(best.unit.text) <= SHORT_UNIT:  # with the unit beside it that the question's words reach
        for j in (best.index - 1, best.index + 1):
            if j in reached:
                span = _reach(units, span, j, NEIGHBOUR_CHARS)
    if not acts and asks_yes_no(question) and not qualifies(best.unit.text):
        near = [j for j in (best.index + 1, best.index - 1) if j in reached and not span[0] <= j <= span[1]
                and units[j].kind in ("prose", "item", "note") and qualifies(units[j].text)]
        span = next((wider for j in near if (wider := _reach(units, span, j, NEIGHBOUR_CHARS)) != span), span)
    lo, hi = span
    if acts and best.unit.kind == "prose" and hi + 1 < len(units) and units[hi + 1].block == best.unit.block:
        # a how-to's fix often follows the sentence that states its problem ("..., causing 414 URI Too
        # Long. The `maxURLLength` option ..."); a long sentence is an answer of its own
        if len(best.unit.text) <= SHORT_SENTENCE and len(_join(units[lo:hi + 2])) <= max_chars // 2:
            hi += 1
    budget = max_chars
    if acts and (whole := procedure_range(parsed, best.index)) is not None:
        lo, hi, budget = min(lo, whole[0]), max(hi, whole[1]), procedure_chars
    elif acts and runbook_section(section.path) in wanted_sections(question):  # what to do, in prose
        lo, budget = 0, procedure_chars
    if not acts and best.unit.kind == "prose":
        lo, hi = passage(units, lo, hi, PASSAGE_CHARS)
    lo, hi = widen(units, lo, hi)
    if acts and (code := code_after(units, lo, hi)) is not None:
        hi, budget = code, max(budget, procedure_chars)
    if any(has_code(u) or u.step for u in units[lo:hi + 1]):
        budget = max(budget, procedure_chars)
    return cut(section, units[lo:hi + 1], budget, None if acts else best.unit)


def table_quote(best: Picked, picks: list[Picked], asked: set[str], question: str, budget: int) -> Quote:
    """The rows a question names by their key (first cell, a number in it or a bound it states
    that fits), with their column names; the whole table when the question is about the table
    (its heading, lead-in or header) and names no row; else the best rows, as before."""
    section, parsed = best.section, best.section.runs[best.run]
    units = parsed.units
    table: Table = parsed.tables[best.unit.block]
    lo, hi = _block_range(units, best.index)
    start = lo - 1 if lo > 0 and units[lo - 1].lead_in else lo
    about = " ".join([section.own, *table.header] + [u.text for u in units[start:lo]])
    asked_here = question_terms(question)
    named = asked_here - matched_terms(asked_here, set(content_terms(f"{section.title} {section.path} {about}")))
    numbers = set(re.findall(r"\d+", question))
    score = {p.index: p.score for p in picks if p.run == best.run and lo <= p.index <= hi}
    ways = (lambda row: numbers & set(re.findall(r"\d+", row[0])),  # "20 minutes" → the "20 min" row
            lambda row: number_fit(question, row_text(table.header, row)) > 0,  # "3000 euros" → "Over €2,500"
            lambda row: matched_terms(named, set(content_terms(row[0]))))  # "as secondary" → "Secondary, ..."
    narrowed = ([lo + i for i, row in enumerate(table.rows) if way(row)] for way in ways)
    rows = next((found for found in narrowed if 0 < len(found) < len(table.rows)), [])
    if rows:
        top = max(score.get(i, 0.0) for i in rows)
        keyed = [i for i in rows if score.get(i, 0.0) >= 0.8 * top][:3]
    elif matched_terms(asked_here, set(content_terms(about))):
        return _whole_table(section, units, table, start, lo, budget)
    else:
        keyed = sorted(i for i, value in score.items() if value >= 0.8 * best.score)[:3]
    return Quote(section, "\n".join(units[i].text for i in keyed))


def _whole_table(section: Section, units: list[Unit], table: Table, start: int, lo: int, budget: int) -> Quote:
    """The lead-in and the table's first rows that fit the budget, and how many are left."""
    lead = _join(units[start:lo])
    rows: list[list[str]] = []
    used = len(lead)
    for row in table.rows:
        line = " | ".join(row)
        if rows and used + len(line) > budget:
            break
        rows.append(row)
        used += len(line) + 4
    left = len(table.rows) - len(rows)
    text = (lead + "\n" if lead else "") + table_text(table, rows)
    return Quote(section, text, f"… ({left} more rows in the doc)" if left else "")


def qualifying(quotes: list[Quote], sections: list[Section]) -> tuple[Quote, Section] | None:
    """The first quote that states a rule, and the section of its page that qualifies it
    (Exceptions, Caveats, ...), when one is among the sections and not quoted already."""
    ruled = next((q for q in quotes if _RULE.search(q.text)), None)
    if ruled is None:
        return None
    quoted = {id(q.section) for q in quotes}
    found = next((s for s in sections if s.doc == ruled.section.doc and id(s) not in quoted
                  and _QUALIFIER.search(s.own)), None)
    return (ruled, found) if found is not None else None


def qualifier(quotes: list[Quote], sections: list[Section], asked: set[str], max_chars: int) -> Quote | None:
    """The section of a quote's page that qualifies a rule it states (see `qualifying`): its
    units that share the question's words (other than the page title's), else its name."""
    if (found := qualifying(quotes, sections)) is None:
        return None
    ruled, s = found
    specific = asked - matched_terms(asked, set(content_terms(ruled.section.title)))
    units = s.runs[0].units
    mine = [i for i, u in enumerate(units) if matched_terms(specific, set(content_terms(u.text)))]
    if mine:
        lo, hi = widen(units, mine[0], mine[-1])
        quote = cut(s, units[lo:hi + 1], max_chars)
        quote.label = f"*{s.own}:*"
        return quote
    return Quote(s, f"{s.own.capitalize()} apply: see {s.title} › {s.path}")


def prerequisites(quotes: list[Quote], sections: list[Section]) -> list[Section]:
    """The sections before a quoted procedure on its page that say what must hold or who must
    approve first ("When break-glass is allowed", "Who approves", "Prerequisites"), in document
    order: the commands are never given without the conditions the doc puts first."""
    page = quotes[0].section.doc
    if not any(is_code(line) or NUMBERED.match(line) for q in quotes if q.section.doc == page
               for line in q.text.splitlines()):
        return []  # a row or a sentence, not steps to follow
    start = min(q.section.ordinal for q in quotes if q.section.doc == page)
    quoted = {id(q.section) for q in quotes}
    return sorted((s for s in sections if s.doc == page and s.ordinal < start and id(s) not in quoted
                   and _PREREQUISITE.search(s.own)), key=lambda s: s.ordinal)


_FENCED = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.S | re.M)


def with_note(text: str, note: str) -> str:
    """Text with a note after it: on a line of its own after a closing fence (a fence line with
    text after it closes nothing), else after a space."""
    if not note:
        return text
    return text + ("\n" if is_code(text.rsplit("\n", 1)[-1]) else " ") + note


def quote_text(quote: Quote, text: str) -> str:
    """A quote's text (or what is left of it) with its label before it and its note after it."""
    return (quote.label + "\n" if quote.label else "") + with_note(text, quote.note)


def render(quotes: list[Quote]) -> str:
    """The quotes in order, each cited once by its section's source, a code block shown once and
    a quote that says again what an earlier one said (the same sentence on two pages) shown once,
    cited by both."""
    seen: set[str] = set()
    shown: list[str] = []  # each part's text, flattened
    parts: list[str] = []
    for quote in quotes:
        def once(m: re.Match[str]) -> str:
            body = m.group(0).split("\n", 1)[1]
            if body in seen:
                return ""
            seen.add(body)
            return m.group(0)

        text = _FENCED.sub(once, quote.text).strip()
        if not text:
            continue
        flat = " ".join(text.split())
        if (again := next((i for i, earlier in enumerate(shown) if flat in earlier), None)) is not None:
            if f"[{quote.section.n}]" not in parts[again]:
                parts[again] += f"[{quote.section.n}]"
            continue
        shown.append(flat)
        text = quote_text(quote, text)
        end = "\n" if is_code(text.rsplit("\n", 1)[-1]) else " "
        parts.append(f"{text}{end}[{quote.section.n}]")
    return "\n".join(parts)
