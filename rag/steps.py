"""A procedure spread over several sections of a page, quoted as one sequence of spans.

- The "Step n" sections of a page, in step order: of the sub-sections of one step, the one whose
  heading names the question (the others named); each step's span is all of it when short, else
  its commands with their lead-ins.
- The sub-sections of the runbook section a question asks for (Mitigation › Capacity planning,
  Mitigation › Defrag), in document order.
When the budget is spent the last quote says which steps are left ("… (steps 5–7 in the doc)").
- A command quoted whole from its section, then the next section's when that one begins with a
  command ("Requesting access" → "Connecting": `tp-breakglass request`, then `… connect`).
"""
from __future__ import annotations

import re

from rag.procedures import Picked, Quote, Section, cut, has_code, runbook_section, wanted_sections, widen
from rag.spans import Parsed, Unit
from rag.terms import content_terms, matched_terms

_STEP = re.compile(r"^step\s*(\d+)\b", re.I)


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
    keep = [i for i, u in enumerate(units) if has_code(u) or u.step]
    if not keep:
        return units[:2]
    chosen: set[int] = set()
    for i in keep:
        lo, hi = widen(units, i, i)
        chosen.update(range(lo, hi + 1))
    return [units[i] for i in sorted(chosen)]


def next_command(quotes: list[Quote], sections: list[Section], budget: int) -> Quote | None:
    """The next section of the page, at the same depth, when it begins with a code block and the
    last quote ends with one: the procedure goes on there. None when it does not, or when it does
    not fit the budget next to the quotes."""
    last = quotes[-1]
    if last.note or not last.text.rstrip().endswith(("```", "~~~")):
        return None
    here = last.section
    outer = here.path.rpartition(" › ")[0]
    after = sorted((s for s in sections if s.doc == here.doc and s.ordinal > here.ordinal), key=lambda s: s.ordinal)
    following = after[0] if after else None
    if following is None or following.path.rpartition(" › ")[0] != outer or not following.runs:
        return None
    units = following.runs[0].units
    left = budget - sum(len(q.text) for q in quotes)
    if not units or not has_code(units[0]) or len(units[0].text) > left:
        return None
    quote = cut(following, units, left)
    quote.label = f"*{following.own}:*"
    return quote
