"""An index or sync streams its rows (issue 36 item 3: 2.1 GB for a 3,830-chunk first sync): the
documents are chunked, embedded and written a bounded batch at a time, into one commit that lands
only once the last batch is made."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from foundation.wiring import rag_config
from rag import EmbeddingError, LocalMiniLM
from rag import Index, open_index
from rag.config import RagConfig
from rag.embeddings import length_batches
from rag.indexer import RowStream, apply_documents
from tests.support.settings import SAMPLE_DOCS, make_settings


class Counting:
    """The real model, counting the texts of each call; it fails on call `fail_at`, if given."""

    def __init__(self, model: LocalMiniLM, fail_at: int | None = None) -> None:
        self.model, self.fail_at, self.calls = model, fail_at, []  # type: list[int]
        self.name, self.dim, self.threads = model.name, model.dim, 1

    def embed(self, texts: list[str]) -> np.ndarray:
        return self.model.embed(texts)

    def embed_batches(self, texts: list[str]) -> Iterator[tuple[list[int], np.ndarray]]:
        self.calls.append(len(texts))
        if len(self.calls) == self.fail_at:
            raise EmbeddingError("the embedding endpoint went away")
        yield from self.model.embed_batches(texts)


def config(tmp_path: Path, index_url: str = "") -> RagConfig:
    return rag_config(make_settings(tmp_path / "data", index_url=index_url or None))


def opened(tmp_path: Path, index_url: str) -> Index:
    """The index on each store (the `index_url` fixture): LanceDB in tmp_path/index, or Postgres."""
    return open_index(config(tmp_path / "index", index_url).index)


def test_rows_are_embedded_and_written_a_batch_at_a_time(tmp_path: Path, embedder: LocalMiniLM,
                                                        index_url: str) -> None:
    rag = config(tmp_path)
    docs, _ = rag.docs.read_folder(SAMPLE_DOCS)
    store, counting = opened(tmp_path, index_url), Counting(embedder)
    stream = RowStream(docs, {}, store, counting, rag, batch_chunks=40)
    store.write(stream.reader(), None)
    assert stream.stats.chunks == store.chunk_count() > 120
    assert len(counting.calls) >= 3 and max(counting.calls) < 80  # never the whole folder in one call
    assert sum(counting.calls) == stream.stats.chunks_embedded == stream.to_embed


def test_a_failure_while_streaming_leaves_the_index_as_it_was(tmp_path: Path, embedder: LocalMiniLM,
                                                             index_url: str) -> None:
    store, rag = opened(tmp_path, index_url), config(tmp_path)
    docs, _ = rag.docs.read_folder(SAMPLE_DOCS)
    apply_documents(store, embedder, rag, docs[:3], {}, full=True)
    before = store.doc_hashes()
    failing = Counting(embedder, fail_at=2)
    with pytest.raises(EmbeddingError, match="went away"):  # the embedder's error, not "index unreadable"
        store.write(RowStream(docs, {}, store, failing, rag, batch_chunks=40).reader(), None)
    assert len(failing.calls) == 2  # the first batch was made (and read by the write) before the failure
    assert store.doc_hashes() == before


def test_long_texts_are_embedded_fewer_at_a_time() -> None:
    texts = ["word " * 40] * 16 + ["word " * 200] * 16  # ~70 and 256 tokens: the attention grows as their square
    batches = length_batches(texts, 16)
    assert sorted(i for batch in batches for i in batch) == list(range(32))
    assert max(len(b) for b in batches if b[0] >= 16) <= 4 and max(len(b) for b in batches if b[0] < 16) == 16
