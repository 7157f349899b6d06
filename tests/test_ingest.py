"""Bulk embedding: threads give the same vectors as one thread, batches are saved to the vector
cache as they finish, and progress is shown and recorded."""
from __future__ import annotations

import io
import logging
from pathlib import Path

import numpy as np
import pytest

from rag.embeddings import LocalMiniLM, bulk_threads, cores, length_batches
from rag.indexer import embed_chunks
from rag.chunking import chunk_document
from rag.documents import AccessRules, load_folder
from rag.levels import Level
from rag.progress import Progress, describe, recording_to
from rag.store.search import Store
from tests.support.settings import SAMPLE_DOCS


def sample_chunks(count: int) -> list:
    docs, _ = load_folder(SAMPLE_DOCS, ["**/*.md"], [], AccessRules({}, Level.team), 1_000_000)
    chunks = [c for doc in docs for c in chunk_document(doc, 1000, 150)]
    return chunks[:count]


def test_threads_embed_the_same_vectors_as_one_thread(embedder: LocalMiniLM) -> None:
    texts = [c.embed_text for c in sample_chunks(40)]
    one = embedder.embed(texts)
    two = LocalMiniLM(threads=2, batch=8).embed(texts)
    assert one.shape == two.shape == (40, 384)
    assert float((one * two).sum(1).min()) >= 0.9999
    single = embedder.embed([texts[7]])[0]  # a query: one batch of one text
    assert float(single @ one[7]) >= 0.9999
    assert np.allclose(np.linalg.norm(two, axis=1), 1.0, atol=1e-5)


def test_length_batches_cover_every_text_once_shortest_first() -> None:
    texts = ["ccc", "a", "bbbbb", "dd", "e" * 9]
    batches = length_batches(texts, 2)
    assert sorted(i for b in batches for i in b) == list(range(5))
    assert [len(texts[i]) for b in batches for i in b] == [1, 2, 3, 5, 9]


def test_bulk_threads_leave_a_core_to_queries_while_serving() -> None:
    assert bulk_threads(3, serving=True) == 3
    assert bulk_threads(0, serving=False) == cores()
    assert bulk_threads(0, serving=True) == max(1, cores() - 1)


def test_vectors_are_saved_as_they_are_computed_and_progress_recorded(tmp_path: Path, embedder: LocalMiniLM) -> None:
    store = Store(str(tmp_path / "index"))
    chunks = sample_chunks(48)
    recorded: list[tuple[int, int]] = []
    def record(done: int, total: int) -> None:
        recorded.append((done, total))
        cached.append(len(store.cached_vectors([c.text_hash for c in chunks])))

    cached: list[int] = []
    with recording_to(record):
        vectors, embedded = embed_chunks(store, embedder, chunks, save_rows=16)
    unique = len({c.text_hash for c in chunks})
    assert embedded == unique
    assert recorded[0] == (0, unique) and recorded[-1] == (unique, unique)
    assert len(recorded) >= 3  # saved in several batches, not once at the end
    # what each record claims is really in the cache by then (a killed run keeps it)
    assert all(saved >= done for (done, _), saved in zip(recorded, cached))
    again, embedded_again = embed_chunks(store, embedder, chunks)
    assert embedded_again == 0 and np.array_equal(vectors, again)


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_is_a_bar_on_a_terminal_and_log_lines_elsewhere(caplog: pytest.LogCaptureFixture) -> None:
    terminal = Terminal()
    bar = Progress(100, stream=terminal)
    bar.advance(40)
    bar.close()
    assert "40/100" in terminal.getvalue() and "chunk" in terminal.getvalue()

    caplog.set_level(logging.INFO, "docsbot.progress")
    plain = io.StringIO()
    lines = Progress(33_046, stream=plain, log_every_s=0.0)
    lines.advance(12_000)
    lines.close()
    assert plain.getvalue() == ""
    assert "embedded 12,000 / 33,046 chunks" in caplog.text


def test_describe_gives_rate_and_eta() -> None:
    assert describe(12_000, 33_046, 21.0) == "embedded 12,000 / 33,046 chunks, 21/s, ETA 17 min"
    assert describe(90, 100, 5.0) == "embedded 90 / 100 chunks, 5/s, ETA 2 s"
