"""A page named by a camel-case identifier (an alert, a class) is found by a question that names
it in words: the full-text index also holds the identifier's words, and the extractive answerer
reads a heading's identifier as its words. Real runbooks (tests/fixtures/runbooks, openshift/runbooks)
indexed with the real embedding model and LanceDB."""
from __future__ import annotations

from pathlib import Path

import pytest

from foundation.wiring import lease_config, rag_config
from rag import Engine, Level
from rag.store.search import Store
from rag.embeddings import LocalMiniLM
from rag.extractive import ExtractiveAnswerer
from rag.spans import fences_balanced
from rag.terms import identifier_words
from sync.folder import index_folder
from tests.support.settings import make_settings
from tests.test_extractive_spans import in_order

RUNBOOKS = Path(__file__).parent / "fixtures" / "runbooks"
QUESTION = "etcd members are down, how do I check the health of etcd?"


@pytest.mark.parametrize("text, words", [
    ("etcdMembersDown is firing", "etcd Members Down"),
    ("ExtremelyHighIndividualControlPlaneMemory", "Extremely High Individual Control Plane Memory"),
    ("use httpBatchLink, then httpBatchLink again with useQuery", "http Batch Link"),
    ("KubeAPIDown and getHTTPResponse", "Kube API Down get HTTP Response"),
    ("HTTP, OAuth, iOS, etcd and v11 are not camel case", ""),
    ("MariaDB, PostgreSQL, GitHub and OpenShift are names, not words", ""),
])
def test_identifier_words(text: str, words: str) -> None:
    assert identifier_words(text) == words


def test_two_word_identifiers_count_where_asked_for() -> None:
    # what a span covers (rag/extractive.py) reads "queryOptions" as "query options" too
    assert identifier_words("MariaDB and queryOptions", min_words=2) == "Maria DB query Options"


@pytest.fixture
def runbooks(tmp_path: Path, embedder: LocalMiniLM) -> Engine:
    settings = make_settings(tmp_path / "index", docs_dir=str(RUNBOOKS), default_level="public")
    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    index_folder(engine, lease_config(settings), RUNBOOKS)
    return engine


async def test_the_full_text_list_finds_the_alert_a_question_names_in_words(runbooks: Engine) -> None:
    hits = await runbooks.store.text(QUESTION, int(Level.public), 8)
    # before: ExtremelyHighIndividualControlPlaneMemory, whose Diagnosis mentions etcd's health
    # more often than the page of the alert the question names
    assert hits[0].row["doc_path"] == "etcdMembersDown.md", [h.row["doc_path"] for h in hits]


async def test_the_page_the_question_names_answers_it(runbooks: Engine) -> None:
    answer = await runbooks.ask(QUESTION, Level.public)
    assert answer.answered, answer.detail
    assert {c.doc_path for c in answer.citations} == {"etcdMembersDown.md"}, answer.citations
    assert in_order(answer.answer, "oc rsh -c etcdctl", "etcdctl endpoint health -w table"), answer.answer
    assert fences_balanced(answer.answer)
