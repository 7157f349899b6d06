"""The public face of `rag`: index a folder, and answer a question at a reader's level.

question (a follow-up made standalone) → embed → hybrid retrieval (access filter inside the
search) → optional rerank → similarity floor → MMR → answerability gate → prompt (injection
filter, budget) → generation → citation check → citations renumbered in the order shown → Answer.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from opentelemetry import trace

from rag.answer import ABSTAIN_MESSAGES, NOT_SURE_LEAD, Answer, Citation, Diagnostics
from rag import answerability
from rag.check import Checked, StreamGate, check_answer, links_in, renumber, without_foreign_links
from rag.config import RagConfig
from rag.embeddings import Embedder, EmbeddingError, make_embedder
from rag.extractive import ExtractiveAnswerer
from rag.followup import Focus, Rewriter, focus, names_any, search_query
from rag.freshness import citation_warning
from rag.generation import Generator, ProviderError, TextSink, make_generator
from rag.indexer import IndexStats, Provenance, apply_documents
from rag.intent import Intents
from rag.kinds import CHECKED, lacks_kind, thread_kind
from rag.terms import coverage, question_terms, well_formed
from rag.levels import Level
from rag.mentions import unmentioned
from rag.owners import Ownership, front_matter_of
from rag.prompt import Source, select_sources, without_bidi
from rag.sourcing import span_sources
from rag.rerank import Reranker, make_reranker
from rag.retrieval import Candidate, Languages, Mode, Retrieval, languages_for, retrieve
from rag.scope import FALLS_BACK, Scope, documents_in
from rag.answer_steps import StepSink, StepStatus, checking, reading, searching
from rag.store import Index, StoreError, open_index

History = Sequence[tuple[str, str]]  # (speaker "user" | "agent", text), oldest first
_Chosen = tuple[Source, Candidate]  # a source the answer is written from, and the chunk it is
_TRACER = trace.get_tracer(__name__)
_READ_STEPS = 3  # pages named in "reading <page>" steps


def _unseen(_step: object) -> None:
    """The step sink of a caller that shows no steps."""


@dataclass
class Engine:
    config: RagConfig
    store: Index
    embedder: Embedder
    generator: Generator
    # Built from the config when not given (the calibrated model is read once, at start).
    answerability: answerability.Model | None = None
    reranker: Reranker | None = field(default=None)
    rewriter: Rewriter | None = field(default=None)
    # What quotes a not-sure passage: the generator when it is the embedded answerer, else one of its own.
    quoter: ExtractiveAnswerer = field(init=False)
    # The meaning check of injections (rag/intent.py), on the engine's embedder when it is MiniLM.
    intents: Intents | None = None

    def __post_init__(self) -> None:
        self.quoter = self.generator if isinstance(self.generator, ExtractiveAnswerer) else ExtractiveAnswerer()
        self.answerability = self.answerability or answerability.load(self.config.answer.answerability_file)
        self.intents = self.intents or Intents.over(self.embedder)
        self.reranker = self.reranker or make_reranker(self.config.rerank)
        if self.rewriter is None and self.config.llm.enabled:
            self.rewriter = Rewriter(self.config.llm)

    @classmethod
    def open(cls, config: RagConfig, generator: Generator | None = None, read_only: bool = False) -> "Engine":
        """`read_only`: this process never writes the index (a replica), so an index on object
        storage is read from a local mirror that keeps answering when the bucket does not."""
        store = open_index(config.index, read_only)
        return cls(config, store, make_embedder(config), generator or make_generator(config.llm))

    async def aclose(self) -> None:
        """Closes the LLM clients' connections (the bot calls it when it stops); the engine
        stays usable: a client is reopened when next asked."""
        for part in (self.generator, self.rewriter):
            close = getattr(part, "aclose", None)  # an extractive answerer holds no connection
            if close is not None:
                await close()

    # -- indexing ---------------------------------------------------------------------------
    def index_folder(self, root: Path, provenance: dict[str, Provenance] | None = None) -> IndexStats:
        """Full index of a folder: the index afterwards holds exactly its readable documents."""
        docs, skipped = self.config.docs.read_folder(root)
        stats = apply_documents(self.store, self.embedder, self.config, docs, provenance or {}, full=True)
        stats.skipped = skipped
        # The folder is the repository here: its CODEOWNERS, if any, is read from it (rag/owners.py).
        owners = Ownership(front_matter_of(docs)).with_repository(root)
        self.store.set_meta(docs_root=str(root.resolve()), ownership=owners.to_meta())
        return stats

    # -- answering --------------------------------------------------------------------------
    async def search(
        self, question: str, level: Level, history: History = (), mode: Mode = "hybrid", language: str = "",
        within: frozenset[str] | None = None,
    ) -> tuple[Retrieval, np.ndarray, dict[str, float]]:
        """Retrieval only (used by ask and the eval): the retrieval, the query vector, timings.
        `language`: the asker's ("ja"; "" unknown): on docs in several languages each page is
        taken in it where the page has it, else in the docs' default language (rag/retrieval.py).
        `within`: only these documents are searched (a channel's scope, rag/scope.py)."""
        question, history = well_formed(question), [(speaker, well_formed(text)) for speaker, text in history]
        timings: dict[str, float] = {}
        started = time.perf_counter()
        query_text = await self.search_query(question, history)
        timings["followup_ms"] = _ms(started)
        started = time.perf_counter()
        with _TRACER.start_as_current_span("embed"):
            vector = (await asyncio.to_thread(self.embedder.embed, [query_text]))[0]  # CPU-bound
        timings["embed_ms"] = _ms(started)
        started = time.perf_counter()
        languages = await self.languages(language)
        result = await retrieve(self.store, vector, query_text, int(level), self.config.retrieval, mode, self.reranker,
                                languages, within)
        result.query = query_text
        timings["retrieve_ms"] = _ms(started)
        if result.rerank:
            timings["rerank_ms"] = result.rerank_ms
        return result, vector, timings

    async def languages(self, asker: str) -> Languages | None:
        """How a question in `asker`'s language picks among a page's variants; None when the index
        is in one language (its documents counted once per index version, rag/store/tables.py)."""
        return languages_for(asker, self.config.docs.language, await self.store.languages())

    async def search_query(self, question: str, history: History = ()) -> str:
        """What is searched for this question in its thread (see rag/followup.py)."""
        query, _ = await search_query(question, history, self.rewriter)
        return query

    def citation(self, candidate: Candidate, n: int = 0) -> Citation:
        """A retrieved chunk cited as an answer cites it: links, version, commit and the freshness
        warning (a search result shown without an answer, e.g. the MCP server's search_docs)."""
        return _citation(n, candidate, self.config.answer.review_days)

    async def _blocked(self, vector: np.ndarray, level: Level, ceiling: Level, mine: Retrieval,
                       within: frozenset[str] | None) -> int:
        """How many of the best matches a reader at `ceiling` may see are above `level`, when they
        dominate: the best match is above `level` and either beats everything a reader at `level`
        may see by the margin or most of the top k are above it too. Only this count leaves the
        function, and no document above `ceiling` is searched (0 when `ceiling` is not above `level`)."""
        if level >= ceiling:
            return 0
        r = self.config.retrieval
        nearest = await self.store.dense(vector, int(ceiling), r.top_k, within)
        hits = [h for h in nearest if h.score >= r.min_similarity]
        above = [h for h in hits if h.row["access_rank"] > int(level)]
        if not hits or hits[0].row["access_rank"] <= int(level):
            return 0
        clearly_better = hits[0].score >= mine.best_similarity + self.config.answer.no_access_margin
        return len(above) if clearly_better or 2 * len(above) > len(hits) else 0

    def _ceiling(self, level: Level, asker: Level | None) -> Level:
        """The highest level `_blocked` may search for a question answered at `level`: every level
        when the access hint is on (`no_access` then says that better documents exist, by design);
        else the asker's own (a person in a channel below their level, who may be offered a DM):
        with the hint off nobody learns anything of a document above their own level, not even
        as a count in a diagnostic or a log line."""
        if self.config.answer.access_hint:
            return Level.restricted
        return max(level, asker) if asker is not None else level

    async def _rest_of_top_doc(self, retrieval: Retrieval, query: np.ndarray, level: Level,
                               thread: Focus) -> list[Candidate]:
        """The best document's other chunks, in order, to follow the selected ones within the
        context budget: the answer to "why" or "how" is often another section of the page that
        matched (an ADR's Context, the next step). For a follow-up (`thread`), its subject found
        the pages and its own new terms say what is asked of them now: when no chunk of the top
        page names one, the page read on is the best selected one that names one and the subject
        too ("and a Lead SRE?" after the Lead Programmer's reports: the SREs' titles, not the
        programmers', nor a page that merely mentions SREs). The top page's chunks naming one are
        not moved first: that lifted two more dev follow-ups and cost a formats set its gold page
        (docs/design.md)."""
        if not self.config.answer.expand_top_doc or not retrieval.selected:
            return []
        rows = await self.store.doc_rows(retrieval.selected[0].row["doc_path"], int(level))
        # the new terms the retrieval found too: "what if the server wants digest instead?" reads
        # on for "digest", not for every page section that happens to name a server
        new = frozenset(t for t in thread.new
                        if any(names_any(frozenset({t}), c.row["text"]) for c in retrieval.selected))
        if new and not any(names_any(new, row["text"]) for row in rows):
            other = next((c for c in retrieval.selected
                          if names_any(new, c.row["text"]) and names_any(thread.subject, c.row["text"])), None)
            rows = await self.store.doc_rows(other.row["doc_path"], int(level)) if other else rows
        have = {c.chunk_id for c in retrieval.selected}
        rest = []
        for row in rows:
            vector = np.asarray(row.pop("vector"), dtype=np.float32)
            if row["chunk_id"] not in have:
                rest.append(Candidate(row, vector, float(vector @ query), 0.0))
        return rest

    async def ask(self, question: str, level: Level, history: History = (), on_text: TextSink | None = None,
                  language: str = "", scope: Scope | None = None, asker: Level | None = None,
                  on_step: StepSink | None = None) -> Answer:
        """Answer at `level`, from the docs in the asker's `language` where a page has it (see
        `search`), searching a channel's `scope` first (rag/scope.py). Never raises for a bad index
        or provider: those become abstentions. `asker`: the asker's own level when others read the
        answer too (`level` is then the conversation's): `diagnostics.blocked` counts the matches
        between the two (see `_ceiling`).

        `on_text` gets the generated text as it streams, through a StreamGate: from the first
        citation that names a given source, with links the sources do not contain removed (the
        citation check still decides what the returned Answer says). An answer never links to a
        URL its sources do not contain.

        `on_step` hears each step as it starts and ends (rag/answer_steps.py): searching the docs, reading
        the pages the answer is written from, checking the citations."""
        steps = on_step or _unseen
        question, turns = well_formed(question), [(speaker, well_formed(text)) for speaker, text in history]
        total = time.perf_counter()
        levels = (level, self._ceiling(level, asker))
        answer, found = await self._retrieve_in_scope(question, levels, turns, total, language, scope, steps)
        if isinstance(found, Answer):
            return found
        retrieval, vector, passed = found
        try:
            chosen = await self._select(answer, (retrieval, vector), level, focus(question, turns))
        except EmbeddingError as exc:  # the meaning check's model: no source is read unchecked
            return _abstain(answer, "index_unavailable", str(exc), total)
        if not chosen:
            return _abstain(answer, "no_match", "every match was dropped as an injection attempt", total)
        _read(steps, chosen, "in_progress")
        if missing := await self._never_mentioned(question, [source for source, _ in chosen], level):
            _read(steps, chosen, "complete")
            _abstain(answer, "no_match", f"the docs never mention {', '.join(missing)}", total)
            return _near_miss(answer, retrieval.selected, self.config.answer.review_days)
        doubt = f"answerability {answer.diagnostics.answerability:.2f} below the threshold"
        if passed or thread_kind(question, turns) in CHECKED:
            checked = await self._generate_and_check(answer, chosen, turns, on_text, total, steps)
            if checked.abstain_reason in MODEL_FAILED and self.generator is not self.quoter:
                checked = self._quoted(checked, chosen, turns, total)  # the docs' own words instead
            if checked.answered and (passed or _holds_value(question, turns, checked.answer)):
                return checked
            doubt = ("the answerer found no passage that holds what was asked" if passed
                     else f"{doubt}, and no quote holds the value asked")
        _read(steps, chosen, "complete")
        return self._not_sure(answer, chosen, turns, total, doubt, retrieval.selected)

    def _quoted(self, answer: Answer, chosen: list[_Chosen], turns: list[tuple[str, str]], total: float) -> Answer:
        """The embedded answerer's quote of the same sources when the model failed (or ran out of
        its deadline) or its citations did not check out, marked as such (`Answer.fallback`):
        the model's text never reaches the reader (the log has its length and the reason)."""
        failed, why = answer.abstain_reason or "", answer.detail
        sources = [source for source, _ in chosen]
        checked = check_answer(self.quoter.answer(answer.question, sources, turns), len(sources))
        if checked.abstain_reason:
            _abstain(answer, "declined", f"{failed}: {why}; no quote of the sources answers either", total)
        else:
            self._cite(answer, checked, [c for _, c in chosen], total)
            answer.model = self.quoter.name
        answer.fallback, answer.detail = failed, f"{failed}: {why}"
        return answer

    def _not_sure(self, answer: Answer, chosen: list[_Chosen], turns: list[tuple[str, str]], total: float,
                  doubt: str, selected: list[Candidate]) -> Answer:
        """The closest passage of the sources, quoted and cited under "not sure" (the gate doubted
        them: still a gap, `answered` false); a decline naming the near miss when no passage
        shares a word with the question. Always the embedded answerer's quote, whatever writes
        the answers: a passage shown as found, never a model's guess at it."""
        _abstain(answer, "no_match", f"{answer.detail}; {doubt}" if answer.fallback else doubt, total)
        sources = [source for source, _ in chosen]
        checked = check_answer(self.quoter.closest(answer.question, sources, turns), len(sources))
        if checked.abstain_reason:
            return _near_miss(answer, selected, self.config.answer.review_days)
        self._cite(answer, checked, [c for _, c in chosen], total)
        answer.answer, answer.answered, answer.confidence = f"{NOT_SURE_LEAD}\n\n{answer.answer}", False, "not_sure"
        answer.abstain_reason, answer.model = "no_match", self.quoter.name
        return answer

    async def _retrieve_in_scope(
        self, question: str, levels: tuple[Level, Level], turns: list[tuple[str, str]], total: float, language: str,
        scope: Scope | None, steps: StepSink = _unseen,
    ) -> tuple[Answer, tuple[Retrieval, np.ndarray, bool] | Answer]:
        """`_retrieve_and_gate` in the scope; when nothing there passes the gate (or the gate is not
        sure of it), a `prefer` scope tries every document the reader may read and the answer says
        so, an `only` scope says it looked in its documents alone. `levels`: the reader's, and
        `_blocked`'s ceiling."""
        level = levels[0]
        answer = self._new_answer(question, level)
        found = await self._retrieve_and_gate(answer, levels, turns, total, language, scope, steps)
        doubted = found[2] is False if isinstance(found, tuple) else found.abstain_reason in FALLS_BACK
        if scope is None or not doubted:
            return answer, found
        if scope.only:
            answer.scope_note = scope.only_note()
            return answer, found
        answer = self._new_answer(question, level)
        answer.scope_note = scope.fallback_note()
        return answer, await self._retrieve_and_gate(answer, levels, turns, total, language, None, steps)

    def _new_answer(self, question: str, level: Level) -> Answer:
        return Answer(question, "", False, None, [], Diagnostics(), level.name, model=self.generator.name)

    async def _retrieve_and_gate(
        self, answer: Answer, levels: tuple[Level, Level], turns: list[tuple[str, str]], total: float,
        language: str = "", scope: Scope | None = None, steps: StepSink = _unseen,
    ) -> tuple[Retrieval, np.ndarray, bool] | Answer:
        """The retrieval, the query vector and whether the answerability gate is sure of them; else
        the abstention (index unavailable, better matches above the reader's level, nothing above
        the similarity floor). Below the gate's threshold the reader still gets the closest passage,
        as "not sure" (see `ask`): a question whose answer can be checked (a value: how long, how
        much, what time; a how-to: a command or a step, rag/kinds.CHECKED) is answered when the
        answer holds what was asked. `levels`: the reader's, and the highest `_blocked` may search
        (`_ceiling`)."""
        level, ceiling = levels
        diag = answer.diagnostics
        steps(searching("in_progress"))
        try:
            # A read of the meta table: off the event loop, like the query embedding.
            meta = await asyncio.to_thread(self.store.check_embedding, self.embedder.name, self.embedder.dim)
            answer.index_commit = meta.get("commit") or ""
            within = await documents_in(self.store, scope) if scope is not None else None
            retrieval, vector, timings = await self.search(answer.question, level, turns, language=language,
                                                           within=within)
            diag.timings_ms.update(timings)
            blocked = await self._blocked(vector, level, ceiling, retrieval, within)
        except (StoreError, EmbeddingError) as exc:
            steps(searching("error"))
            return _abstain(answer, "index_unavailable", str(exc), total)
        steps(searching("complete"))
        diag.candidates = retrieval.candidates
        diag.passed_threshold = len(retrieval.passed)
        diag.best_similarity = round(retrieval.best_similarity, 4)
        diag.blocked = blocked
        diag.rerank = retrieval.rerank
        if blocked and self.config.answer.access_hint:
            return _abstain(answer, "no_access", "better matches exist only above the reader's level", total)
        if not retrieval.passed:
            return _abstain(answer, "no_match", "nothing above the similarity threshold", total)
        assert self.answerability is not None  # built in __post_init__
        answerable, p = self.answerability.answerable(answerability.features(answer.question, retrieval))
        diag.answerability = round(p, 4)
        return retrieval, vector, answerable

    async def _never_mentioned(self, question: str, sources: list[Source], level: Level) -> list[str]:
        """The names the question uses (rag/mentions.py) that neither its sources nor any other
        document the reader may read mention: a quote would be about something else."""
        missing = unmentioned(question, (f"{s.title} {s.section} {s.text}" for s in sources))
        try:
            found = [name for name in missing if await self.store.text(name, int(level), 1)]
        except StoreError:
            return []  # not known: the gate and the quote decide, as before
        return [name for name in missing if name not in found]

    async def _select(self, answer: Answer, found: tuple[Retrieval, np.ndarray], level: Level,
                      thread: Focus) -> list[_Chosen]:
        """The sources the answer is written from (the selected chunks and the rest of the top
        page, see `_rest_of_top_doc`, within the context budget, injection attempts dropped: by
        wording or by meaning, rag/prompt.py and rag/intent.py), each with its chunk."""
        retrieval, vector = found
        chosen = retrieval.selected + await self._rest_of_top_doc(retrieval, vector, level, thread)
        page: dict[str, float] = {}  # how on-topic each page is: its best chunk's similarity
        for c in chosen:
            page[c.row["doc_path"]] = max(page.get(c.row["doc_path"], 0.0), c.similarity)
        started = time.perf_counter()
        sources, kept, dropped = await asyncio.to_thread(  # the meaning check embeds sentences: CPU-bound
            select_sources,
            [(c.row["title"], c.row["section"], c.row["text"], page[c.row["doc_path"]]) for c in chosen],
            self.config.answer.context_budget_chars, self.intents,
        )
        answer.diagnostics.timings_ms["sources_ms"] = _ms(started)
        chosen = [chosen[i] for i in kept]
        answer.diagnostics.injections_dropped = dropped
        answer.diagnostics.selected = len(sources)
        answer.retrieved = [_retrieved(c) for c in chosen]
        # The extractive answerer puts a section's chunks back together in document order.
        return [(replace(s, doc=c.row["doc_path"], ordinal=c.row["ordinal"]), c) for s, c in zip(sources, chosen)]

    async def _generate_and_check(
        self, answer: Answer, chosen: list[_Chosen], turns: list[tuple[str, str]], on_text: TextSink | None,
        total: float, steps: StepSink = _unseen,
    ) -> Answer:
        """The generator's answer from the sources, kept only when its citations check out (else
        an abstention), its sources renumbered in the order they are cited."""
        sources = [source for source, _ in chosen]
        candidates = [c for _, c in chosen]
        known = links_in([source.text for source in sources]
                         + [link or "" for c in candidates for link in (c.row["url"], c.row.get("page_url"))])
        if self.generator.reads_spans:  # a model reads the spans the extractive answerer would quote
            spans = span_sources(answer.question, sources, turns, self.config.answer.context_budget_chars)
            sources, candidates = [s for s, _ in spans], [candidates[i] for _, i in spans]
        gate = StreamGate(on_text, len(sources), known) if on_text else None
        started = time.perf_counter()
        try:
            with _TRACER.start_as_current_span("generate", attributes={"model": self.generator.name}):
                raw = await self.generator.generate(answer.question, sources, turns, gate)
        except ProviderError as exc:
            answer.retry_after = exc.retry_after
            _read(steps, chosen, "error")
            return _abstain(answer, "provider_error", str(exc), total)
        finally:
            answer.diagnostics.timings_ms["generate_ms"] = _ms(started)
        _read(steps, chosen, "complete")
        steps(checking("in_progress"))
        checked = check_answer(without_foreign_links(raw, known), len(sources))
        steps(checking("error" if checked.abstain_reason and checked.abstain_reason != "declined" else "complete"))
        if checked.abstain_reason:  # the text itself stays out of logs: a model may repeat anything
            _abstain(answer, checked.abstain_reason, f"the model's {len(raw)} characters cited no given source"
                     if checked.abstain_reason == "invalid_citations" else f"declined ({len(raw)} characters)", total)
            if checked.abstain_reason == "declined":
                return _near_miss(answer, candidates, self.config.answer.review_days)
            return answer
        return self._cite(answer, checked, candidates, total)

    def _cite(self, answer: Answer, checked: Checked, candidates: list[Candidate], total: float) -> Answer:
        """`answer` says the checked text, its citations read [1], [2], ... in the order they
        appear and its sources listed that way too."""
        text, order = renumber(checked.text, checked.cited, len(candidates))
        given = [candidates[i] for i in order]  # the cited sources first, then the others
        answer.retrieved = [_retrieved(c) for c in given]
        answer.answer, answer.answered, answer.confidence, answer.abstain_reason = text, True, "answer", None
        review_days = self.config.answer.review_days
        answer.citations = [_citation(n, c, review_days) for n, c in enumerate(given[:len(checked.cited)], 1)]
        answer.diagnostics.timings_ms["total_ms"] = _ms(total)
        return answer


def _read(steps: StepSink, chosen: list[_Chosen], status: StepStatus) -> None:
    """The "reading <page>" steps of the pages the answer is written from (the first few)."""
    pages = {c.row["doc_path"]: s.title for s, c in chosen}
    for doc_path, title in list(pages.items())[:_READ_STEPS]:
        steps(reading(doc_path, title, status))


VALUE_COVERAGE = 0.5  # of the question's key terms, in an answer past a declining gate
# A model's answer that cannot be used: the embedded answerer quotes the same sources instead.
MODEL_FAILED = frozenset({"provider_error", "invalid_citations"})


def _ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 2)


def _abstain(answer: Answer, reason: str, detail: str, started: float) -> Answer:
    answer.answered, answer.confidence = False, "declined"
    answer.abstain_reason = reason
    answer.answer = ABSTAIN_MESSAGES[reason]
    answer.detail = detail
    answer.citations = []
    answer.diagnostics.timings_ms["total_ms"] = _ms(started)
    return answer


def _holds_value(question: str, turns: list[tuple[str, str]], text: str) -> bool:
    """Whether an answer past a declining gate holds the value (or the command) asked and is about what was asked
    (more than half the question's key terms, a hyphenated one by its last part: a retention
    table's durations do not answer how long Slack messages are kept; 'pre-record' is 'recorded')."""
    key = {term.rpartition("-")[2] or term for term in question_terms(question)}
    return not lacks_kind(thread_kind(question, turns), text) and coverage(key, text) > VALUE_COVERAGE


def _near_miss(answer: Answer, candidates: list[Candidate], review_days: int) -> Answer:
    """An abstention that names the closest section the reader may see (the candidates were
    searched at the reader's level), said as "not sure" rather than "nothing covers this"."""
    if candidates:
        answer.near_miss = _citation(0, max(candidates, key=lambda c: c.similarity), review_days)
        answer.answer = ABSTAIN_MESSAGES["unsure"]
    return answer


def _citation(n: int, c: Candidate, review_days: int) -> Citation:
    """The citation of a chunk; `review_days`: the review period of a page whose front matter
    names none (its warning, rag/freshness.py)."""
    row = c.row
    return Citation(
        n=n,
        doc_path=row["doc_path"],
        title=without_bidi(row["title"]),
        section=without_bidi(row["section"]),
        version=row["version"],
        commit=row["commit"],
        commit_date=row["commit_date"],
        url=row["url"],
        score=round(c.similarity, 4),
        anchor=row["anchor"],
        access=row["access"],
        page_url=row.get("page_url") or "",
        warning=citation_warning(row, review_days, datetime.now(timezone.utc)),
    )


def _retrieved(c: Candidate) -> dict:
    row = c.row
    return {
        "chunk_id": row["chunk_id"],
        "doc_path": row["doc_path"],
        "section": row["section"],
        "version": row["version"],
        "commit": row["commit"],
        "text_hash": row["text_hash"],
        "access": row["access"],
        "similarity": round(c.similarity, 4),
        "fused": round(c.fused, 6),
    }
