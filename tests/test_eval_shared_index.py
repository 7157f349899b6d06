"""`python -m eval shared-index` end to end on two committed fixture trees as two sets: each set
scored on its own index, then both synced as two sources of one index and asked again with their
gold paths as `<set>:<path>`. The dev suite's run (`make eval`-sized) is not run here."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import shared_index
from rag import LocalMiniLM
from tests.support.settings import REPO, make_settings

FIXTURES = REPO / "tests" / "fixtures"
RUNBOOKS = [
    {"id": "rb-leader", "question": "What happens to the cluster when etcd has no leader?",
     "gold_doc_ids": ["etcdNoLeader.md"], "answerable": True, "facts": ["leader"]},
    {"id": "rb-memory", "question": "When does the HighOverallControlPlaneMemory alert become pending?",
     "gold_doc_ids": ["HighOverallControlPlaneMemory.md"], "answerable": True, "facts": ["60%"]},
    {"id": "rb-pets", "question": "Are dogs allowed in the office on Fridays?", "gold_doc_ids": [],
     "answerable": False, "level": "public"},
]
HTTPX = [
    {"id": "hx-proxy", "question": "How do I send HTTPX requests through an HTTP proxy?",
     "gold_doc_ids": ["advanced/proxies.md"], "answerable": True, "level": "public", "facts": ["proxy"]},
    {"id": "hx-client", "question": "Why use an httpx Client instead of the top-level API?",
     "gold_doc_ids": ["advanced/clients.md"], "answerable": True, "level": "public"},
]


def suite(tmp_path: Path, runbooks_gold: list[dict] = RUNBOOKS) -> Path:
    for name, rows in (("runbooks", runbooks_gold), ("httpx", HTTPX)):
        (tmp_path / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "suite.json"
    path.write_text(json.dumps({"sets": [
        {"name": "runbooks", "docs": str(FIXTURES / "runbooks"), "golden": ["runbooks.jsonl"],
         "include": ["**/*.md"]},
        {"name": "httpx", "docs": str(FIXTURES / "formats" / "httpx"), "golden": ["httpx.jsonl"],
         "default_level": "public"},
    ]}))
    return path


def test_two_sets_as_sources_of_one_index_keep_their_figures(
    tmp_path: Path, embedder: LocalMiniLM, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(tmp_path / "data")
    argv = ["shared-index", "--suite", str(suite(tmp_path)), "--json"]
    assert shared_index.main(argv, settings, embedder) == 0
    report = json.loads(capsys.readouterr().out)
    runbooks, httpx = report["sets"]["runbooks"], report["sets"]["httpx"]
    # The gold pages are found in the shared index only under their `<set>:` paths.
    for view in ("whole", "own source"):
        assert runbooks[view]["report"]["hit_rate"] == httpx[view]["report"]["hit_rate"] == 1.0
        assert runbooks[view]["questions"]["hit_rate"] == {"own": 2, "shared": 2, "of": 2, "difference": 0}
        assert runbooks[view]["within"] and httpx[view]["within"]
    assert runbooks["own"]["docs"] == str(FIXTURES / "runbooks")
    assert (tmp_path / "data" / "eval" / "runbooks").is_dir()  # the own index, where `eval run` keeps it
    assert report["lost"] == []
    # Every vector of the shared sync came from the two own indexes' caches.
    assert report["sync"]["documents"] == 9 and report["sync"]["model_embedded"] == 0
    assert report["sync"]["borrowed"] > 0

    assert shared_index.main(argv[:-1], settings, embedder) == 0
    table = capsys.readouterr().out
    assert "the model embedded 0 texts" in table
    assert [line.split()[-2:] for line in table.splitlines() if "hit@k" in line] == [["+0", "PASS"]] * 4
    assert "searching the whole: every set within 1 question of its own figures: PASS" in table
    assert table.rstrip().endswith("searching the own source: every set within 1 question of its own figures: PASS")

def test_a_gold_page_the_shared_index_lacks_is_an_error(
    tmp_path: Path, embedder: LocalMiniLM, capsys: pytest.CaptureFixture[str]
) -> None:
    # NOTICE is no page (not included): the own run scores it a miss, the shared index refuses it.
    rows = [dict(RUNBOOKS[0], gold_doc_ids=["NOTICE"]), *RUNBOOKS[1:]]
    argv = ["shared-index", "--suite", str(suite(tmp_path, rows))]
    assert shared_index.main(argv, make_settings(tmp_path / "data"), embedder) == 2
    assert "gold doc ids not in the shared index: runbooks:NOTICE" in capsys.readouterr().err


def test_a_set_losing_two_questions_misses() -> None:
    reasons = {"a": ["miss: no gold doc among the hybrid top 4"], "b": ["miss: no gold doc among the hybrid top 4"]}
    own = {"answerable": 10, "hit_rate": 1.0, "fact_cases": 0, "fact_shown": None, "failure_reasons": {}}
    shared = {"answerable": 10, "hit_rate": 0.8, "fact_cases": 0, "fact_shown": None, "failure_reasons": reasons}
    lost_two = shared_index.SetResult("s", own, shared)
    assert lost_two.questions == {"hit_rate": {"own": 10, "shared": 8, "of": 10, "difference": -2}}
    assert not lost_two.within and lost_two.lost() == {"a": ["hit_rate"], "b": ["hit_rate"]}
    lost_one = shared_index.SetResult("s", own, shared | {"hit_rate": 0.9, "failure_reasons": {"a": reasons["a"]}})
    assert lost_one.within and lost_one.lost() == {"a": ["hit_rate"]}
