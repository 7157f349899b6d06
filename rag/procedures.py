"""Spans of a section that a person can act on: contiguous units widened to whole blocks.

- A lead-in ("via the following command:") comes with what it introduces, and a code block or a
  list with its lead-in; a note right after the span (Note, Warning, Unless) comes with it.
- For "how do I" and runbook action questions, a procedure is quoted whole up to a budget: a
  numbered list, a list whose items carry code, a run of code blocks with their lead-ins, or the
  "Step n" sections of a page (in step order, the sub-section that fits the question best). When
  it must be cut, it is cut at a step boundary and says which steps are left ("… (steps 5–7 in
  the doc)"), the citation being the link. Code blocks are never cut; one whose closing fence is
  missing from the sources is not quoted.
- A table answers by row (the question names a row's key: its first cell, or a number that fits
  a bound a row states) or whole (it asks about the table: its first rows, and how many more).
- A rule comes with the sections of its page that qualify it (Exceptions, Caveats, ...): quoted
  where they share the question's words, else named.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from rag.kinds import question_kind
from rag.spans import Parsed, Table, Unit, is_code, row_text, table_text
from rag.terms import content_terms, matched_terms, question_terms

_STEP = re.compile(r"^step\s*(\d+)\b", re.I)
_QUALIFIER = re.compile(r"\b(exceptions?|caveats?|limitations?|warnings?|notes?|unless|requires? approval)\b", re.I)
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


def acting(kind: str | None, question: str) -> bool:
    """Whether the question asks for something to do: steps, a mitigation, a diagnosis."""
    return kind == "steps" or runbook_kind(question) in ("mitigation", "diagnosis")


def _has_code(unit: Unit) -> bool:
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
        if hi > lo and (unit.block in parsed.numbered or any(_has_code(u) for u in units[lo:hi + 1])):
            return lo, hi
    code = [j for j, u in enumerate(units) if _has_code(u)]
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


def _join(units: list[Unit]) -> str:
    """Sentences of one paragraph joined by a space, every other unit on its own line."""
    text = ""
    for previous, unit in zip([None, *units], units):
        same = previous is not None and previous.block == unit.block and previous.kind == unit.kind == "prose"
        text += (" " if same else "\n" if text else "") + unit.text
    return text


def cut(section: Section, units: list[Unit], budget: int) -> Quote:
    """The units that fit the budget (at least the first), stopping before a code block that is
    not complete; a lead-in left without what it introduced is dropped; what is left is named."""
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
    return Quote(section, _join(kept), note)


def choose_span(best: Picked, picks: list[Picked], acts: bool, asked: set[str], question: str,
                max_passages: int, max_chars: int, procedure_chars: int) -> Quote:
    """The span of `best`'s section (picks: that section's scored units, best first)."""
    section, parsed = best.section, best.section.runs[best.run]
    units = parsed.units
    if best.unit.kind == "row":
        return table_quote(best, picks, asked, question, procedure_chars)
    lo = hi = best.index
    for p in [p for p in picks if p.run == best.run and p.score >= 0.8 * best.score][1:]:
        wider = widen(units, min(lo, p.index), max(hi, p.index))
        if len(_join(units[wider[0]:wider[1] + 1])) <= max_chars:  # still one short span
            lo, hi = wider
    budget = max_chars
    if acts and (whole := procedure_range(parsed, best.index)) is not None:
        lo, hi, budget = min(lo, whole[0]), max(hi, whole[1]), procedure_chars
    elif acts and runbook_section(section.path) in wanted_sections(question):  # what to do, in prose
        lo, budget = 0, procedure_chars
    lo, hi = widen(units, lo, hi)
    if any(_has_code(u) or u.step for u in units[lo:hi + 1]):
        budget = max(budget, procedure_chars)
    return cut(section, units[lo:hi + 1], budget)


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


def step_number(path: str) -> tuple[int, int] | None:
    """(depth, n) of the "Step n" heading in a heading path, if any."""
    for depth, part in enumerate(path.split(" › ")):
        if match := _STEP.match(part.strip()):
            return depth, int(match.group(1))
    return None


def step_quotes(best: Picked, sections: list[Section], asked: set[str], question: str,
                budget: int) -> list[Quote] | None:
    """A page's "Step n" sections in step order, when the best unit is in one and the question is
    about the whole procedure (not about one step's own heading): each step's span, from the
    sub-section whose heading names the question (else the first; the others named), cut at a
    step boundary. Likewise the sub-sections of the runbook section the question asks for
    (Mitigation › Capacity planning, Mitigation › Defrag), in document order."""
    parts = best.section.path.split(" › ")
    found = step_number(best.section.path)
    if found is None:
        return _runbook_quotes(best, sections, question, budget)
    depth = found[0]
    page = matched_terms(asked, set(content_terms(f"{best.section.title} {' '.join(parts[:depth])}")))
    if matched_terms(asked, set(content_terms(parts[depth]))) - page:
        return None
    steps: dict[int, list[Section]] = {}
    for s in sections:
        if s.doc == best.section.doc and (where := step_number(s.path)) and where[0] == depth:
            steps.setdefault(where[1], []).append(s)
    groups = []
    for n in sorted(steps):
        with_text = [s for s in sorted(steps[n], key=lambda s: s.ordinal) if s.runs and s.runs[0].units]
        if with_text:
            chosen = max(with_text,
                         key=lambda s: (len(matched_terms(asked, set(content_terms(s.own))) - page), -s.ordinal))
            others = [s.own for s in with_text if s is not chosen and s.path.count(" › ") > depth]
            label = ("*" + " › ".join(chosen.path.split(" › ")[depth:]) + "*"
                     + (f" (or: {', '.join(others)})" if others else ""))
            groups.append((n, chosen, label))
    return _sequence(groups, budget)


def _runbook_quotes(best: Picked, sections: list[Section], question: str, budget: int) -> list[Quote] | None:
    parts = best.section.path.split(" › ")
    name = runbook_section(best.section.path)
    if name is None or name not in wanted_sections(question) or len(parts) < 2:
        return None
    top = next(i for i, part in enumerate(parts) if part.strip().lower().startswith(name))
    under = [s for s in sorted(sections, key=lambda s: s.ordinal) if s.doc == best.section.doc
             and s.path.split(" › ")[:top + 1] == parts[:top + 1] and s.runs and s.runs[0].units]
    return _sequence([(0, s, "*" + " › ".join(s.path.split(" › ")[top:]) + "*") for s in under], budget)


def _sequence(groups: list[tuple[int, Section, str]], budget: int) -> list[Quote] | None:
    """One quote per (step number or 0, section, label), in order, until the budget is spent;
    the last says what is left. None unless two or more fit."""
    quotes: list[Quote] = []
    used = 0
    for position, (n, section, label) in enumerate(groups):
        quote = cut(section, _step_units(section.runs[0]), budget)
        quote.label = label
        size = len(quote.text) + len(label)
        if quotes and used + size > budget:
            rest = [m for m, _, _ in groups[position:] if m]
            quotes[-1].note = ("… (more in the doc)" if not rest else f"… (step {rest[0]} in the doc)" if len(rest) == 1
                               else f"… (steps {rest[0]}–{rest[-1]} in the doc)")
            break
        quotes.append(quote)
        used += size
    return quotes if len(quotes) > 1 else None


def _step_units(parsed: Parsed) -> list[Unit]:
    """What a step is quoted by: all of it when short, else its commands with their lead-ins."""
    units = parsed.units
    if sum(len(u.text) for u in units) <= 400:
        return units
    keep = [i for i, u in enumerate(units) if _has_code(u) or u.step]
    if not keep:
        return units[:2]
    chosen: set[int] = set()
    for i in keep:
        lo, hi = widen(units, i, i)
        chosen.update(range(lo, hi + 1))
    return [units[i] for i in sorted(chosen)]


def qualifier(quotes: list[Quote], sections: list[Section], asked: set[str], max_chars: int) -> Quote | None:
    """The section of a quote's page that qualifies a rule it states (Exceptions,
    Caveats, ...): its units that share the question's words (other than the page title's),
    else its name."""
    ruled = next((q for q in quotes if _RULE.search(q.text)), None)
    if ruled is None:
        return None
    first = ruled.section
    specific = asked - matched_terms(asked, set(content_terms(first.title)))
    quoted = {id(q.section) for q in quotes}
    for s in sections:
        if s.doc != first.doc or id(s) in quoted or not _QUALIFIER.search(s.own):
            continue
        units = s.runs[0].units
        mine = [i for i, u in enumerate(units) if matched_terms(specific, set(content_terms(u.text)))]
        if mine:
            lo, hi = widen(units, mine[0], mine[-1])
            quote = cut(s, units[lo:hi + 1], max_chars)
            quote.label = f"*{s.own}:*"
            return quote
        return Quote(s, f"{s.own.capitalize()} apply: see {s.title} › {s.path}")
    return None


_FENCED = re.compile(r"^(`{3,}|~{3,})[^\n]*\n.*?^\1[ \t]*$", re.S | re.M)


def render(quotes: list[Quote]) -> str:
    """The quotes in order, each cited once by its section's source, a code block shown once."""
    seen: set[str] = set()
    parts = []
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
        if quote.note:
            text += "\n" + quote.note if is_code(text.rsplit("\n", 1)[-1]) else " " + quote.note
        end = "\n" if is_code(text.rsplit("\n", 1)[-1]) else " "
        parts.append((quote.label + "\n" if quote.label else "") + f"{text}{end}[{quote.section.n}]")
    return "\n".join(parts)
