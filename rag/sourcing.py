"""The LLM prompt's sources: the spans the extractive answerer would quote, not whole chunks.

A chunk boundary can fall inside a procedure, a code block or a table, and the chunk that holds
a rule need not hold its exception. So the prompt gets, for each selected section, the span the
extractive answerer (rag/extractive.py) would quote were that section the best: a procedure whole
and in document order (a "Step n" page's steps too), a table with its header, the section that
qualifies a rule right after it; a span that is cut says what is left ("… (steps 5–7 in the
doc)"). A section no span comes from (it shares no word with the question) is given as its
chunks, as before. The spans get wider budgets than a Slack answer: a model reads more.

Each span is one numbered source, tied to the chunk its section is cited by (the lowest-numbered
one), so the citation check and the citations work on spans as they did on chunks.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from rag.extractive import ExtractiveAnswerer
from rag.procedures import Quote, quote_text, with_note
from rag.prompt import Source

# A prompt reads more than a Slack answer shows: wider spans, cut less often.
PROMPT_SPANS = ExtractiveAnswerer(max_chars=1500, procedure_chars=3000)
_MORE = "… (more in the doc)"


def span_sources(question: str, sources: list[Source], history: Sequence[tuple[str, str]],
                 budget: int) -> list[tuple[Source, int]]:
    """The prompt's sources, numbered from 1, each with the index in `sources` of the chunk it is
    cited by. Groups come in the order of their best-ranked source (a procedure's steps, and a
    qualifying section, stay together and in order) and fill `budget` characters: a group that
    does not fit whole ends at its last quote that does, which says more is in the doc."""
    groups, rest = PROMPT_SPANS.spans(question, sources, history)
    index = {s.n: i for i, s in enumerate(sources)}
    unquoted = {(s.doc, s.path) for s in rest}
    ordered = [(min(q.section.n for q in quotes), [(_source(q), index[q.section.n]) for q in quotes])
               for quotes in groups]
    ordered += [(s.n, [(s, i)]) for i, s in enumerate(sources) if (s.doc or s.title, s.section) in unquoted]
    ordered.sort(key=lambda group: group[0])
    out: list[tuple[Source, int]] = []
    used = 0
    for _, members in ordered:
        for position, (source, cited) in enumerate(members):
            if out and used + len(source.text) > budget:
                if position:  # the group is cut: its last source says so
                    last, at = out[-1]
                    out[-1] = (replace(last, text=with_note(last.text, _MORE)), at)
                break
            text = source.text if out else source.text[:budget]
            used += len(text)
            out.append((replace(source, n=len(out) + 1, text=text), cited))
    return out


def _source(quote: Quote) -> Source:
    """The quote as a source: its text with its label and note, its section's title and heading
    path (numbered when it is placed)."""
    s = quote.section
    return Source(0, s.title, s.path, quote_text(quote, quote.text.strip()), s.similarity, s.doc, s.ordinal)
