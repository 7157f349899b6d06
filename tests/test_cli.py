"""The `docsbot` command as a person runs it: one clear line for every failure, never a traceback."""
import json
from pathlib import Path

from eval.standins.openai_server import OpenAIStandIn
from tests.support.cli import docsbot

GOOD = ("---\ntitle: Deploy Policy\nversion: '2.3'\naccess: team\n---\n## Deploy windows\n\n"
        "Production deploys are allowed Monday to Thursday. No deploys on Fridays.\n")


def test_index_reports_counts_and_skipped_files_then_ask_answers_json(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text(GOOD)
    (docs / "broken.md").write_text("---\ntitle: [oops\n---\nbody\n")
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index")}
    indexed = docsbot("index", "--docs", str(docs), env=env)
    assert indexed.returncode == 0, indexed.stderr
    assert "indexed 1 documents" in indexed.stdout
    assert "skipped broken.md: front matter is not valid YAML at line 3" in indexed.stdout
    asked = docsbot("ask", "can I deploy on friday?", "--level", "team", "--json", env=env)
    result = json.loads(asked.stdout)
    assert set(result) >= {"answer", "answered", "abstain_reason", "citations", "diagnostics"}
    assert result["answered"] and result["citations"][0]["doc_path"] == "deploy.md" and asked.returncode == 0
    assert set(result["citations"][0]) >= {"n", "doc_path", "title", "section", "version", "commit", "url", "score"}
    assert set(result["diagnostics"]) >= {"candidates", "passed_threshold", "selected", "timings_ms"}
    declined = docsbot("ask", "can I deploy on friday?", "--json", env=env)
    public = json.loads(declined.stdout)
    assert public["abstain_reason"] in ("no_access", "no_match") and public["citations"] == []
    assert declined.returncode == 1  # declined: scripts can tell


def test_a_not_sure_passage_is_printed_cited_and_exits_1_like_a_decline(tmp_path: Path):
    """Issue 50: the gate doubts the match, so the closest passage is shown as not sure, with its
    page, and scripts still see no answer (`answered: false`, exit 1)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text(GOOD.replace("access: team", "access: public"))
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index")}
    assert docsbot("index", "--docs", str(docs), env=env).returncode == 0
    asked = docsbot("ask", "is there a deploy freeze around christmas?", "--json", env=env)
    result = json.loads(asked.stdout)
    assert asked.returncode == 1 and result["answered"] is False and result["confidence"] == "not_sure"
    assert result["answer"].startswith("I couldn't find a sure answer") and "Monday to Thursday" in result["answer"]
    assert [c["doc_path"] for c in result["citations"]] == ["deploy.md"]
    printed = docsbot("ask", "is there a deploy freeze around christmas?", env=env)
    assert printed.returncode == 1 and "[1] Deploy Policy › Deploy windows" in printed.stdout


def test_failures_are_one_line(tmp_path: Path):
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index")}
    missing = docsbot("ask", "anything?", env=env)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr.strip().count("\n") == 0 and "run `docsbot index`" in missing.stderr
    nofolder = docsbot("index", "--docs", str(tmp_path / "nope"), env=env)
    assert nofolder.returncode == 2 and nofolder.stderr.strip().count("\n") == 0 and "does not exist" in nofolder.stderr
    (tmp_path / "empty").mkdir()
    empty = docsbot("index", "--docs", str(tmp_path / "empty"), env=env)
    assert empty.returncode == 0 and "no documents were indexed" in empty.stdout
    bad_level = docsbot("index", "--docs", str(tmp_path / "empty"), env={**env, "DOCSBOT_DEFAULT_LEVEL": "secret"})
    assert bad_level.returncode == 2 and "Traceback" not in bad_level.stderr
    assert "DOCSBOT_DEFAULT_LEVEL" in bad_level.stderr


def test_wrong_dimension_and_unreachable_llm(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text(GOOD)
    env = {"DOCSBOT_DATA_DIR": str(tmp_path / "index")}
    assert docsbot("index", "--docs", str(docs), env=env).returncode == 0
    down = docsbot("ask", "can I deploy on friday?", "--level", "team", "--json",
                   env={**env, "OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "DOCSBOT_LLM_MAX_RETRIES": "0"})
    quoted = json.loads(down.stdout)  # the docs' own words instead (issue 54 item 3)
    assert quoted["answered"] and quoted["fallback"] == "provider_error" and down.returncode == 0
    assert "Monday to Thursday" in quoted["answer"] and quoted["citations"][0]["doc_path"] == "deploy.md"
    server = OpenAIStandIn(dim=16).start()
    try:
        other = {**env, "DOCSBOT_EMBEDDING_PROVIDER": "openai", "DOCSBOT_EMBEDDING_MODEL": "tiny",
                 "DOCSBOT_EMBEDDING_DIM": "16", "OPENAI_BASE_URL": server.base_url}
        refused = docsbot("ask", "friday?", "--json", env=other)
    finally:
        server.stop()
    mismatch = json.loads(refused.stdout)
    assert mismatch["abstain_reason"] == "index_unavailable" and refused.returncode == 2
    assert "all-MiniLM-L6-v2" in mismatch["detail"] and "docsbot index" in mismatch["detail"]
