"""Turning documents into indexed chunks: chunk, reuse cached vectors, embed only new text, write."""
from __future__ import annotations

import contextvars
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa

from rag.chunking import Chunk, chunk_document
from rag.config import ChunkingConfig, LinkConfig, RagConfig
from rag.documents import Document
from rag.embeddings import Embedder
from rag.progress import Progress
from rag.site import page_url, routing_front_matter, site_anchor, site_for
from rag.timing import StageSeconds
from rag.store import Index, chunk_schema, vector_array

# Raised when the chunker's output changes for the same settings, so the next sync rewrites every
# row (2: a title that is only an identifier is no longer part of the chunks' text; 3: chunks are
# made from the formats' document model, rag/formats/, as normalised Markdown; 4: the full-text
# column also holds the words of the camel-case identifiers in the heading path, rag/terms.identifier_words:
# no vector changes; 5: a GitBook page's title from SUMMARY.md, a {#id} anchor in a paragraph
# dropped: indexes built before kept the old titles and text, and the eval's cached ones with them).
CHUNKING_VERSION = 5


@dataclass(frozen=True)
class Provenance:
    """Where a document's text was read: the last commit that touched it, and its link base."""

    commit: str = ""
    commit_date: str = ""


@dataclass
class IndexStats:
    documents: int = 0
    chunks: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    deleted: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    # Wall seconds per step: chunk, embed (incl. cache lookups and saves), save, write, maintain.
    steps: StageSeconds = field(default_factory=StageSeconds)


def chunking_signature(chunking: ChunkingConfig) -> dict[str, int]:
    return {"size": chunking.size, "overlap": chunking.overlap, "version": CHUNKING_VERSION}


def permalink(links: LinkConfig, commit: str, path: str, anchor: str) -> str:
    """The link to a section at a commit; the path percent-encoded (a space, `#`, `"` or newline
    in a file name stays part of the path), its slashes kept."""
    if not links.repo_web or not commit or commit.endswith("+dirty"):  # no web page shows a local edit
        return ""
    full_path = f"{links.repo_subdir.strip('/')}/{path}" if links.repo_subdir.strip("/") else path
    url = links.pattern.format(
        repo_web=links.repo_web.rstrip("/"), commit=commit, path=quote(full_path, safe="/"), anchor=anchor
    )
    return url if anchor else url.rstrip("#")


def site_page(links: LinkConfig, doc: Document, anchor: str) -> str:
    """The section's page on the published docs site (rag/site.py), "" without DOCSBOT_SITE_URL
    or when the file is no page of the site."""
    if not links.site_url:
        return ""
    page = _site_page(links, doc.path, doc.content_hash)
    if page and anchor:
        anchor = site_anchor(site_for(links.site_layout, links.site_root).layout, doc.sections, anchor)
    return f"{page}#{anchor}" if page and anchor else page


@lru_cache(maxsize=4096)
def _site_page(links: LinkConfig, path: str, content_hash: str) -> str:
    """One page URL per document version (its chunks share it; the hash keys a changed slug)."""
    info = site_for(links.site_layout, links.site_root)
    routed = links.site_root and info.layout in ("docusaurus", "hugo", "jekyll")  # the layouts a front matter moves
    front = routing_front_matter(Path(links.site_root), path) if routed else {}
    return page_url(info.layout, links.site_url, path, front, "", info)


# A long run saves its new vectors to the cache every SAVE_EVERY_ROWS of them, every `save_s`
# seconds (DOCSBOT_EMBEDDING_SAVE_S) and at the end of each batch of rows, so a killed index or
# sync embeds little again. Each save is one commit to the cache table, compacted at the end.
SAVE_EVERY_ROWS = 1024
SAVE_EVERY_S = 30.0


def embed_chunks(
    store: Index, embedder: Embedder, chunks: list[Chunk], stats: IndexStats | None = None,
    save_rows: int = SAVE_EVERY_ROWS, save_s: float = SAVE_EVERY_S, progress: Progress | None = None,
) -> tuple[np.ndarray, int]:
    """Vectors for chunks, from the cache where the text was embedded before; returns (vectors,
    number of texts embedded now). New vectors are saved to the cache as they are computed (every
    `save_rows` vectors or `save_s` seconds); `progress` counts them (else a Progress of their own)."""
    cached = store.cached_vectors([c.text_hash for c in chunks])
    missing: dict[str, str] = {}
    for chunk in chunks:
        if chunk.text_hash not in cached:
            missing.setdefault(chunk.text_hash, chunk.embed_text)
    if missing:
        own = progress is None
        progress = progress or Progress(len(missing))
        try:
            _embed_missing(store, embedder, missing, cached, stats or IndexStats(), save_rows, save_s, progress)
        finally:
            if own:
                progress.close()
    vectors = np.stack([cached[c.text_hash] for c in chunks]) if chunks else np.zeros((0, embedder.dim), np.float32)
    return vectors, len(missing)


def _embed_missing(
    store: Index, embedder: Embedder, missing: dict[str, str], into: dict[str, np.ndarray], stats: IndexStats,
    save_rows: int, save_s: float, progress: Progress,
) -> None:
    hashes = list(missing)
    unsaved: list[str] = []
    last_save = time.monotonic()
    for idx, vectors in embedder.embed_batches([missing[h] for h in hashes]):
        for i, vector in zip(idx, vectors):
            into[hashes[i]] = vector
            unsaved.append(hashes[i])
        progress.advance(len(idx))
        if len(unsaved) >= save_rows or time.monotonic() - last_save >= save_s:
            with stats.steps.stage("save"):
                _save(store, unsaved, into, progress)
            last_save = time.monotonic()
    with stats.steps.stage("save"):
        _save(store, unsaved, into, progress)


def _save(store: Index, unsaved: list[str], vectors: dict[str, np.ndarray], progress: Progress) -> None:
    if unsaved:
        store.cache_vectors(unsaved, np.stack([vectors[h] for h in unsaved]))
        progress.saved(progress.done)
        unsaved.clear()


# Chunks chunked, embedded and turned into Arrow rows at a time: what a write holds in memory,
# whatever the size of the repository (the rows stream into one commit, rag/store/tables.py).
BATCH_CHUNKS = 512


@dataclass
class RowStream:
    """The rows of `docs` as a stream of record batches, made BATCH_CHUNKS chunks at a time as the
    write reads them. A first pass chunks every document to count the chunks and the texts the
    cache lacks (the progress total), keeping only their hashes; `stats` is complete once the
    stream has been read to its end."""

    docs: list[Document]
    provenance: dict[str, Provenance]
    store: Index
    embedder: Embedder
    config: RagConfig
    stats: IndexStats = field(default_factory=IndexStats)
    batch_chunks: int = BATCH_CHUNKS

    def __post_init__(self) -> None:
        self.stats.documents = len(self.docs)
        with self.stats.steps.stage("chunk"):
            hashes = {chunk.text_hash for doc in self.docs for chunk in self._chunks(doc)}
            self.stats.chunks = sum(1 for doc in self.docs for _ in self._chunks(doc))
        with self.stats.steps.stage("embed"):
            self.to_embed = len(hashes - self.store.cached_hashes(sorted(hashes)))

    def _chunks(self, doc: Document) -> list[Chunk]:
        return chunk_document(doc, self.config.chunking.size, self.config.chunking.overlap)

    def reader(self) -> pa.RecordBatchReader:
        """The batches, made in the caller's context wherever Lance pulls them from (its own
        threads): the progress recorder and `hidden_progress` are context variables."""
        context, batches = contextvars.copy_context(), self.batches()

        def pulled() -> Iterator[pa.RecordBatch]:
            while True:
                try:
                    yield context.run(next, batches)
                except StopIteration:
                    return

        return pa.RecordBatchReader.from_batches(chunk_schema(self.embedder.dim), pulled())

    def batches(self) -> Iterator[pa.RecordBatch]:
        progress = Progress(self.to_embed)
        try:
            chunks: list[Chunk] = []
            owner: list[Document] = []
            for n, doc in enumerate(self.docs, 1):
                progress.file(n - 1, len(self.docs))
                with self.stats.steps.stage("chunk"):
                    for chunk in self._chunks(doc):
                        chunks.append(chunk)
                        owner.append(doc)
                if len(chunks) >= self.batch_chunks or (n == len(self.docs) and chunks):
                    yield self._rows(chunks, owner, progress)
                    chunks, owner = [], []
            progress.file(len(self.docs), len(self.docs))
        finally:
            progress.close()

    def _rows(self, chunks: list[Chunk], owner: list[Document], progress: Progress) -> pa.RecordBatch:
        with self.stats.steps.stage("embed"):
            vectors, embedded = embed_chunks(self.store, self.embedder, chunks, self.stats,
                                             save_s=self.config.embedding.save_s, progress=progress)
        self.stats.chunks_embedded += embedded
        self.stats.chunks_reused = self.stats.chunks - self.stats.chunks_embedded
        return rows_of(chunks, owner, vectors, self.provenance, self.config, self.embedder.dim)


def rows_of(
    chunks: list[Chunk], owner: list[Document], vectors: np.ndarray, provenance: dict[str, Provenance],
    config: RagConfig, dim: int,
) -> pa.RecordBatch:
    """The chunks table's rows of `chunks` (each of the document beside it in `owner`)."""
    columns: dict[str, list] = {name: [] for name in chunk_schema(dim).names if name != "vector"}
    for chunk, doc in zip(chunks, owner):
        prov = provenance.get(doc.path, Provenance())
        values = {
            "chunk_id": chunk.chunk_id,
            "doc_path": doc.path,
            "ordinal": chunk.ordinal,
            "title": doc.title,
            "section": chunk.section,
            "anchor": chunk.anchor,
            "version": doc.version,
            "commit": prov.commit,
            "commit_date": prov.commit_date,
            "url": permalink(config.links, prov.commit, doc.path, chunk.anchor),
            "page_url": site_page(config.links, doc, chunk.anchor),
            "access": doc.access.name,
            "access_rank": int(doc.access),
            "area": doc.area,
            "includes": "\n".join(doc.includes),
            "language": doc.language,
            "page": doc.page,
            "status": doc.status,
            "reviewed": doc.reviewed,
            "review_days": doc.review_days or 0,
            "text": chunk.text,
            "search_text": chunk.search_text,
            "text_hash": chunk.text_hash,
            "doc_hash": doc.content_hash,
        }
        for name, value in values.items():
            columns[name].append(value)
    schema = chunk_schema(dim)
    arrays = [pa.array(columns[f.name], type=f.type) for f in schema if f.name != "vector"]
    return pa.RecordBatch.from_arrays([*arrays, vector_array(vectors)], schema=schema)


def build_rows(
    docs: list[Document], provenance: dict[str, Provenance], store: Index, embedder: Embedder, config: RagConfig
) -> tuple[pa.Table, IndexStats]:
    """Every row of `docs` in one table (an index built aside, rag/rebuild.py)."""
    stream = RowStream(docs, provenance, store, embedder, config)
    return pa.Table.from_batches(list(stream.batches()), schema=chunk_schema(embedder.dim)), stream.stats


def apply_documents(
    store: Index,
    embedder: Embedder,
    config: RagConfig,
    docs: list[Document],
    provenance: dict[str, Provenance],
    *,
    removed: Sequence[str] = (),
    full: bool = False,
) -> IndexStats:
    """Index `docs` and drop `removed` paths in one atomic write. `full=True` also drops every
    document not in `docs` (a rebuild)."""
    started = time.perf_counter()
    meta = store.meta()
    built = meta.get("embedding")
    if built and (built["model"], built["dim"]) != (embedder.name, embedder.dim):
        if not full:
            store.check_embedding(embedder.name, embedder.dim)
        store.reset()
    before = store.doc_hashes() if store.exists() else {}
    stream = RowStream(docs, provenance, store, embedder, config)
    stats = stream.stats
    replace = None if full else [d.path for d in docs] + list(removed)
    with stats.steps.stage("write", inner=("chunk", "embed")):  # which happen as the write reads the rows
        store.write(stream.reader() if stats.chunks else chunk_schema(embedder.dim).empty_table(), replace)
    if full:
        stats.deleted = len(set(before) - {d.path for d in docs})
    else:
        stats.deleted = len(set(removed) & set(before))
    shape = {"embedding": {"model": embedder.name, "dim": embedder.dim},
             "chunking": chunking_signature(config.chunking)}
    if not built or _stored(meta, shape) != _stored(shape, shape):  # a write (a commit, ~0.05 s) only when new
        store.set_meta(**shape)
    with stats.steps.stage("maintain"):
        store.maintain(config.index.ann_min_rows)
    stats.seconds = time.perf_counter() - started
    return stats


def _stored(values: dict[str, Any], keys: dict[str, Any]) -> str:
    """The `keys` of `values` as the index's metadata keeps them (JSON: a tuple reads as a list)."""
    return json.dumps({key: values.get(key) for key in keys}, sort_keys=True, default=str)
