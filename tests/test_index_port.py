"""The index port (rag/store/protocol.py) on every store: LanceDB in a temp folder and Postgres
with pgvector (a real server, tests/support/pgvector.py). Small rows with 8-dimensional vectors
written directly, so what each method must return is known exactly. Last, what each store holds
for the columns full-text search ranks by (schema.TEXT_SEARCHED)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa
import pytest
import sqlalchemy as sa

from rag import Index, IndexConfig, WriteRefused, open_index
from rag.retrieval import search_lists
from rag.signals import DENSE, SIGNALS, TEXT, FullText
from rag.store import IndexMissing, chunk_schema
from rag.store.pg_tables import CHUNKS as PG_CHUNKS, driver_url
from rag.store.search import Store
from rag.store.schema import CHUNKS, ROW_DEFAULTS, TEXT_SEARCHED
from tests.support.pgvector import index_database

DIM = 8
RNG = np.random.default_rng(7)


def rows(doc: str, count: int, rank: int = 0, vectors: np.ndarray | None = None, **columns: str) -> pa.Table:
    """`count` chunks of document `doc` at access rank `rank`."""
    vectors = RNG.standard_normal((count, DIM)).astype(np.float32) if vectors is None else vectors
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    data = [{name: ROW_DEFAULTS.get(name, "") for name in chunk_schema(DIM).names} | {
        "chunk_id": f"{doc}#{i}", "doc_path": doc, "ordinal": i, "access_rank": rank, "text_hash": f"{doc}-{i}",
        "doc_hash": f"hash-{doc}", "search_text": f"chunk {i} of {doc} " + columns.get("words", ""),
        "language": columns.get("language", ""), "includes": columns.get("includes", ""), "vector": vectors[i],
    } for i in range(count)]
    return pa.Table.from_pylist(data, schema=chunk_schema(DIM))


@pytest.fixture
def index(index_url: str, tmp_path: Path) -> Iterator[Index]:
    yield open_index(IndexConfig(str(tmp_path / "index"), "", 0.0, 100, index_url))


def test_no_index_yet_reads_as_missing(index: Index) -> None:
    assert not index.exists() and index.counts() == {"documents": 0, "chunks": 0} and index.meta() == {}
    assert index.doc_columns("doc_hash") == {} and index.chunk_columns(["a.md"], "commit") == []


async def test_writes_replace_the_chunks_of_the_named_documents_only(index: Index) -> None:
    index.write(pa.concat_tables([rows("a.md", 3, includes="snippets/x.md"), rows("b.md", 2, language="ja")]), None)
    index.set_meta(commit="c1", embedding={"model": "m", "dim": DIM})
    assert index.exists() and index.counts() == {"documents": 2, "chunks": 5} and index.chunk_count() == 5
    index.write(rows("a.md", 1), ["a.md", "gone.md"])  # a.md now has one chunk; b.md untouched
    assert index.counts() == {"documents": 2, "chunks": 3}
    assert index.doc_hashes() == {"a.md": "hash-a.md", "b.md": "hash-b.md"}
    assert index.doc_columns("access_rank", "commit") == {"a.md": (0, ""), "b.md": (0, "")}
    assert sorted(r["doc_path"] for r in index.chunk_columns(["b.md"], "text_hash")) == ["b.md", "b.md"]
    assert index.includers(["snippets/x.md"]) == []  # a.md's rewrite no longer includes it
    assert await index.documents() == ("a.md", "b.md") and await index.languages() == {"": 1, "ja": 1}
    assert await index.labels(["b.md#1", "nope"]) == {"b.md#1": ("b.md", "ja")}
    whole = await index.rows(["a.md#0"])
    assert whole["a.md#0"]["doc_hash"] == "hash-a.md" and "vector" not in whole["a.md#0"]
    assert [r["ordinal"] for r in await index.doc_rows("b.md", 0)] == [0, 1]
    ids, matrix = index.chunk_vectors()
    assert sorted(ids) == ["a.md#0", "b.md#0", "b.md#1"] and matrix.shape == (3, DIM)
    assert index.all_rows().num_rows == 3 and index.meta()["commit"] == "c1"
    index.write(chunk_schema(DIM).empty_table(), ["b.md"])
    assert index.counts() == {"documents": 1, "chunks": 1}


async def test_the_access_filter_runs_inside_the_search_before_top_k(index: Index) -> None:
    query = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
    near = np.tile(query, (40, 1)) + 0.05 * RNG.standard_normal((40, DIM)).astype(np.float32)
    index.write(pa.concat_tables([rows("secret.md", 40, rank=2, vectors=near, words="deploy rollback"),
                                  rows("open.md", 5, rank=0, words="deploy"), rows("team.md", 5, rank=1)]), None)
    index.maintain(0)
    public = await index.dense(query, 0, 5)
    assert len(public) == 5 and {h.row["doc_path"] for h in public} == {"open.md"}
    assert [h.score for h in public] == sorted((h.score for h in public), reverse=True)
    assert all(np.isclose(h.score, float(h.vector @ query), atol=1e-4) for h in public)
    everything = await index.dense(query, 2, 5)
    assert {h.row["doc_path"] for h in everything} == {"secret.md"}  # the filter is what kept them out above
    assert {h.row["doc_path"] for h in await index.dense(query, 2, 5, frozenset({"team.md"}))} == {"team.md"}
    assert await index.dense(query, 2, 5, frozenset()) == []
    text = await index.text("rollback deploy", 0, 10)
    assert {h.row["doc_path"] for h in text} == {"open.md"} and all("search_text" in h.row for h in text)
    assert await index.text("zyxwvut", 2, 10) == []


async def test_a_large_filtered_search_finds_the_exact_top_rows_through_the_vector_index(index: Index) -> None:
    """3,000 rows, 2% of them public, the vector index built: a public reader still gets its ten
    nearest rows, not what is left of the top ten overall."""
    count = 3000
    vectors = RNG.standard_normal((count, DIM)).astype(np.float32)
    ranks = np.where(np.arange(count) % 50 == 0, 0, 2)
    batches = [rows(f"d{i:04d}.md", 1, rank=int(ranks[i]), vectors=vectors[i:i + 1].copy()) for i in range(count)]
    index.write(pa.concat_tables(batches), None)
    index.maintain(1000)
    query = RNG.standard_normal(DIM).astype(np.float32)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    scores = np.where(ranks == 0, unit @ query, -np.inf)
    exact = {f"d{i:04d}.md" for i in np.argsort(-scores)[:10]}
    found = {h.row["doc_path"] for h in await index.dense(query, 0, 10)}
    assert len(found) == 10 and len(found & exact) >= 9


def test_a_refused_guard_stops_every_commit_and_leaves_the_index(index: Index) -> None:
    index.write(rows("a.md", 2), None)
    with index.guarded(lambda: "lost the lease"):
        with pytest.raises(WriteRefused, match="lost the lease"):
            index.write(rows("b.md", 2), None)
        with pytest.raises(WriteRefused):
            index.set_meta(commit="c2")
    index.write(rows("c.md", 1), ["c.md"])  # outside the block nothing is asked
    assert index.counts() == {"documents": 2, "chunks": 3} and "commit" not in index.meta()


def test_an_error_while_rows_are_made_reaches_the_caller_and_leaves_the_index(index: Index) -> None:
    index.write(rows("a.md", 2), None)
    first = rows("b.md", 2)

    def batches() -> Iterator[pa.RecordBatch]:
        yield from first.to_batches()
        raise KeyError("the embedder went away")

    with pytest.raises(KeyError, match="went away"):
        index.write(pa.RecordBatchReader.from_batches(first.schema, batches()), None)
    assert index.doc_hashes() == {"a.md": "hash-a.md"}


def test_the_vector_cache_adds_only_the_hashes_it_lacks(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "index"))
    store.cache_vectors(["t1", "t2"], np.ones((2, DIM), dtype=np.float32))
    store.cache_vectors(["t2", "t3"], np.full((2, DIM), 2.0, dtype=np.float32))  # t2 again: kept as it was
    cached = store.cached_table()
    assert cached is not None and sorted(cached["text_hash"].to_pylist()) == ["t1", "t2", "t3"]
    assert {h: float(v[0]) for h, v in store.cached_vectors(["t1", "t2", "t3"]).items()} == {
        "t1": 1.0, "t2": 1.0, "t3": 2.0}


def test_a_rebuild_swaps_everything_in_and_a_failed_one_changes_nothing(index: Index) -> None:
    index.write(rows("old.md", 2), None)
    index.cache_vectors(["t1"], np.ones((1, DIM), dtype=np.float32))
    index.set_meta(commit="c1")

    def failing(scratch: Index) -> pa.Table:
        raise KeyError("the docs could not be read")

    with pytest.raises(KeyError):
        index.rebuild(failing, {"commit": None}, reuse_vectors=True)
    assert index.doc_hashes() == {"old.md": "hash-old.md"} and index.meta()["commit"] == "c1"

    def build(scratch: Index) -> pa.Table:
        assert scratch.cached_hashes(["t1"]) == {"t1"}  # the old vector cache, reused
        scratch.cache_vectors(["t2"], np.ones((1, DIM), dtype=np.float32))
        return rows("new.md", 3)

    index.rebuild(build, {"docs_root": "/docs"}, reuse_vectors=True)
    assert index.doc_hashes() == {"new.md": "hash-new.md"} and index.meta() == {"docs_root": "/docs"}
    assert set(index.cached_vectors(["t1", "t2"])) == {"t1", "t2"}
    index.rebuild(lambda scratch: rows("new.md", 1) if not scratch.cached_hashes(["t1"]) else rows("x.md", 1),
                  {}, reuse_vectors=False)  # another model: no vector of the old cache is offered
    assert index.doc_hashes() == {"new.md": "hash-new.md"}


async def test_searches_on_no_index_say_it_is_missing(index: Index) -> None:
    with pytest.raises(IndexMissing, match="no index"):
        await index.dense(np.ones(DIM, dtype=np.float32), 2, 5)


async def test_the_text_list_weighs_a_rare_term_over_a_common_one(index: Index) -> None:
    """BM25's IDF on both stores: the one chunk that holds the
    rare word ranks first, above chunks saying the common word three times."""
    index.write(pa.concat_tables([rows("common.md", 20, words="deploy deploy deploy"),
                                  rows("rare.md", 1, words="deploy rollback")]), None)
    index.maintain(0)
    hits = await index.text("how do I deploy a rollback", 0, 5)
    assert hits[0].row["doc_path"] == "rare.md"


async def test_equal_scores_come_out_in_chunk_id_order_whatever_the_rows_order(index_url: str, tmp_path: Path) -> None:
    """Two pages with the same text tie in both lists; an index updated in place holds its rows
    in another order than one built anew, and the answer must not depend on which it is."""
    same = RNG.standard_normal((1, DIM)).astype(np.float32)
    found = []
    for order in (["b.md", "a.md"], ["a.md", "b.md"]):
        index = open_index(IndexConfig(str(tmp_path / "".join(order)), "", 0.0, 100, index_url))
        index.write(pa.concat_tables([rows(doc, 1, vectors=same.copy(), words="copied redis page") for doc in order]),
                    None)
        lists = await search_lists(index, same[0] / np.linalg.norm(same[0]), "redis page", 0, 5)
        found.append({name: [hit.row["chunk_id"] for hit in hits] for name, hits in lists.items()})
    assert found[0] == found[1] == {DENSE: ["a.md#0", "b.md#0"], TEXT: ["a.md#0", "b.md#0"]}


async def test_the_searches_are_the_signals_given(index: Index) -> None:
    """`search_lists` runs each list it is given, in their order: a third is one Signal object more
    (here a second full-text list under its own name), and its mode searches it alone."""
    index.write(pa.concat_tables([rows("a.md", 2, words="rollback"), rows("b.md", 2)]), None)
    vector = RNG.standard_normal(DIM).astype(np.float32)
    signals = (*SIGNALS, FullText("again", 1.0))
    found = await search_lists(index, vector / np.linalg.norm(vector), "rollback", 0, 5, signals=signals)
    assert list(found) == [DENSE, TEXT, "again"] and len(found[DENSE]) == 4
    assert [h.row["chunk_id"] for h in found["again"]] == [h.row["chunk_id"] for h in found[TEXT]] == ["a.md#0",
                                                                                                    "a.md#1"]
    alone = await search_lists(index, vector, "rollback", 0, 5, "again", signals=signals)
    assert list(alone) == ["again"]


async def test_a_full_text_signal_searches_the_column_it_names(index: Index) -> None:
    """A FullText naming search_text (Index.text's `column`) returns exactly what the text search
    returned before it took a column, and weighs itself by that column's coverage; a column with
    no full-text index is refused on every store, not answered with nothing."""
    index.write(pa.concat_tables([rows("common.md", 6, words="deploy deploy deploy"),
                                  rows("rare.md", 2, words="deploy rollback")]), None)
    index.maintain(0)
    question = "how do I deploy a rollback"
    before = await index.text(question, 0, 5)
    signal = FullText("searched", 1.0, column="search_text")
    hits = await signal.search(index, np.zeros(DIM, dtype=np.float32), question, 0, 5, None)
    assert [(h.row, h.score) for h in hits] == [(h.row, h.score) for h in before] and len(hits) == 5
    assert hits[0].row["doc_path"] == "rare.md" and signal.coverage(hits, question) == 1.0
    assert signal.coverage(hits[2:], question) == 0.5  # common.md's chunks hold "deploy" only
    with pytest.raises(ValueError, match="TEXT_SEARCHED"):
        await index.text(question, 0, 5, column="title")


async def test_maintain_builds_the_full_text_index_an_existing_lancedb_index_lacks(tmp_path: Path) -> None:
    """What a column added to TEXT_SEARCHED meets on an index built before: no FTS index, so LanceDB
    scans the column flat, without the index's tokenizer (no lower-casing: "ROLLBACK" finds
    nothing); the next maintain() builds it, no rebuild needed, and the search is the indexed one."""
    index = open_index(IndexConfig(str(tmp_path / "index"), "", 0.0, 100))
    index.write(rows("a.md", 2, words="rollback"), None)
    indexed = [(h.row, h.score) for h in await index.text("ROLLBACK", 0, 5)]
    table = lancedb.connect(str(tmp_path / "index")).open_table(CHUNKS)
    table.drop_index("search_text_idx")
    assert await index.text("ROLLBACK", 0, 5) == []
    index.maintain(0)
    table.checkout_latest()
    assert {ix.columns[0] for ix in table.list_indices()} >= set(TEXT_SEARCHED)
    assert [(h.row, h.score) for h in await index.text("ROLLBACK", 0, 5)] == indexed and len(indexed) == 2


def test_the_migrations_give_every_searched_column_its_tsvector_and_gin_index(pgvector_server: str) -> None:
    """Postgres ranks a TEXT_SEARCHED column by the tsvector the table names, which a migration
    makes (0008 for search_text, made of its words by 0010): a line added there without its
    migration fails here, not in a search. The configuration is `english`, as the search's
    plainto_tsquery."""
    with index_database(pgvector_server) as url:
        with sa.create_engine(driver_url(url), poolclass=sa.NullPool).connect() as c:
            indexes = c.execute(sa.text("SELECT indexdef FROM pg_indexes WHERE tablename = :table"),
                                {"table": PG_CHUNKS}).scalars().all()
            for column, tsv in TEXT_SEARCHED.items():
                generated = c.execute(sa.text(
                    "SELECT pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d JOIN pg_attribute a "
                    "ON a.attrelid = d.adrelid AND a.attnum = d.adnum WHERE d.adrelid = CAST(:table AS regclass) "
                    "AND a.attname = :tsv"), {"table": PG_CHUNKS, "tsv": tsv}).scalar()
                assert generated == (f"to_tsvector('english'::regconfig, regexp_replace(COALESCE({column}, ''::text), "
                                     "'[[:punct:]]+'::text, ' '::text, 'g'::text))")  # its words (migration 0010)
                assert any(f"USING gin ({tsv})" in index for index in indexes)


async def test_a_term_written_with_punctuation_is_found_word_by_word(index: Index) -> None:
    """"HTTP/2" is the words `http` and `2` in a question; Postgres' parser alone reads the page's
    "HTTP/2" (and `client.get`) as one lexeme each, and the page was never found by them."""
    index.write(pa.concat_tables([rows("http2.md", 1, words="enable HTTP/2 with client.get and http2 true"),
                                  rows("proxies.md", 1, words="route requests through a proxy server"),
                                  rows("other.md", 1, words="turn the page")]), None)
    for question in ("how do I turn on HTTP/2?", "what does client.get return?"):
        assert [hit.row["doc_path"] for hit in await index.text(question, 0, 3)][0] == "http2.md", question


async def test_the_text_list_ranks_alike_on_both_stores(pgvector_server: str, tmp_path: Path) -> None:
    """Postgres scores the rows that hold a term by BM25 from their tsvectors, as LanceDB's
    full-text index does: the same order and the same scores. With ts_rank_cd alone the long page
    that says "proxy" three times came before the short one that names it once."""
    filler = "client transport retries limits pooling streaming cookies headers "
    pages = {"mention.md": "see proxy", "about.md": ("proxy " + filler * 3) * 3, "twice.md": "proxy and proxy",
             "other.md": filler * 2, "timeouts.md": "timeouts for the pool, connect, read and write"}
    table = pa.concat_tables([rows(doc, 1, words=text) for doc, text in pages.items()])
    with index_database(pgvector_server) as url:
        stores = [open_index(IndexConfig(str(tmp_path / "lance"), "", 0.0, 100, "")),
                  open_index(IndexConfig(str(tmp_path / "pg"), "", 0.0, 100, url))]
        for store in stores:
            store.write(table, None)
            store.maintain(100)
        lance, pg = [[(hit.row["doc_path"], round(hit.score, 3)) for hit in await store.text("proxy?", 0, 5)]
                     for store in stores]
    assert [doc for doc, _ in pg] == [doc for doc, _ in lance] == ["twice.md", "mention.md", "about.md"]
    assert pg == lance
