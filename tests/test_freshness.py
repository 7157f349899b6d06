"""Freshness from the front matter: `last_reviewed`, `review_in` and `status` are read strictly,
drafts are left out of `docsbot index` and `docsbot sync` unless DOCSBOT_INDEX_DRAFTS says
otherwise, a citation warns of a deprecated or overdue page, a current page is cited before a
deprecated one, and the docs-gaps report dates a page by its last review. Real docs folders (a
real git repository where commit dates matter), the real embedding model, LanceDB index, engine,
state database and renderers; dates are computed from today."""
from __future__ import annotations

import re
from datetime import date, datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pytest

from bot.blocks import answer_body, answer_message, citation_line
from insights.gaps import GapFinder
from commands.cli import render_answer
from foundation.wiring import lease_config, rag_config, sync_config
from eval.repos import commit_files
from rag import ABSTAIN_MESSAGES, Answer, Citation, Diagnostics, Engine, ExtractiveAnswerer, Level, LocalMiniLM
from rag.store.search import Store
from rag.documents import DRAFT_SKIPPED, AccessRules, DocumentError, load_folder, parse_document
from rag.freshness import age_words, period_days
from rag.store import chunk_schema
from state.answers import AnswerLog
from state.config import GapsConfig
from state.gaps import Reader
from state.opening import open_state
from sync.folder import index_folder
from sync.service import run_sync
from eval.clock import Clock
from tests.support.settings import make_settings
from tests.support.sync import new_repo

RULES = AccessRules({}, Level.public)
TODAY = datetime.now(timezone.utc).date()
TWO_YEARS_AGO = TODAY.replace(day=1, year=TODAY.year - 2) - timedelta(days=30)  # 2 years and 1-2 months


def parse(front_matter: str):
    return parse_document("page.md", f"---\n{front_matter}\n---\n# Page\n\nText.\n".encode(), RULES, 100_000)


def write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def page(title: str, body: str, front_matter: str = "") -> str:
    return f"---\ntitle: {title}\naccess: public\n{front_matter}---\n# {title}\n\n{body}\n"


# -- reading the front matter ---------------------------------------------------------------------------
def test_a_page_without_freshness_fields_is_current_and_dated_by_its_commit() -> None:
    doc = parse("title: Page")
    assert (doc.reviewed, doc.review_days, doc.status) == ("", None, "")


@pytest.mark.parametrize(("written", "reviewed"), [
    ("2025-03-01", "2025-03-01"),  # a YAML date
    ('"2025-03-01"', "2025-03-01"),  # text
    ("2025-03-01 10:30:00", "2025-03-01"),  # a YAML timestamp: its day
    ('"2025-03-01T10:30:00Z"', "2025-03-01"),
    ('""', ""),
])
def test_last_reviewed_is_an_iso_date(written: str, reviewed: str) -> None:
    assert parse(f"last_reviewed: {written}").reviewed == reviewed


@pytest.mark.parametrize(("written", "days"), [
    ("90", 90), ('"90"', 90), ("90d", 90), ("90 days", 90), ("2 weeks", 14), ("1w", 7), ("6 months", 180),
    ("1 month", 30), ("6mo", 180), ("1 year", 365), ("2y", 730), ("1 YEAR", 365),
])
def test_review_in_is_a_number_of_days_or_a_period(written: str, days: int) -> None:
    assert parse(f"review_in: {written}").review_days == days
    assert period_days(written.strip('"')) == days


@pytest.mark.parametrize(("written", "status"), [
    ("status: deprecated", "deprecated"), ("status: Draft", "draft"), ("deprecated: true", "deprecated"),
    ("deprecated: false", ""), ("status: deprecated\ndeprecated: true", "deprecated"),
    ("status: draft\ndeprecated: false", "draft"),
    # a docs team's own workflow words are a current page, never a reason to drop it
    ("status: published", ""), ("status: archived", ""), ("status: stable\ndeprecated: true", "deprecated"),
])
def test_status_is_deprecated_or_draft(written: str, status: str) -> None:
    assert parse(written).status == status


@pytest.mark.parametrize(("written", "reason"), [
    ("last_reviewed: March 2025", "'last_reviewed' must be a date like 2025-03-01, not 'March 2025'"),
    ("last_reviewed: 2025-13-01", "impossible date \\(month must be in 1..12\\)"),
    ('last_reviewed: "2025-02-30"', "'last_reviewed' must be a date like 2025-03-01, not '2025-02-30'"),
    ("last_reviewed: 20", "'last_reviewed' must be a date like 2025-03-01, not 20"),
    ("last_reviewed: [2025-03-01]", "'last_reviewed' must be a date like 2025-03-01, not a list"),
    ("review_in: soon", "'review_in' must be a period like 90, 90d, 6 months or 1 year .*not 'soon'"),
    ("review_in: 0", "'review_in' must be a period"),
    ("review_in: -30", "'review_in' must be a period"),
    ("review_in: 1.5", "'review_in' must be a period"),
    ("review_in: true", "'review_in' must be a period.*not true/false"),
    ("review_in: 200 years", "at most 36,500 days"),
    ("status: [draft]", "'status' must be text, not a list"),
    ("deprecated: yes please", "'deprecated' must be true or false, not 'yes please'"),
    ("status: draft\ndeprecated: true", "'deprecated: true' contradicts 'status: draft'"),
    ("status: deprecated\ndeprecated: false", "'deprecated: false' contradicts 'status: deprecated'"),
])
def test_a_malformed_value_is_a_one_line_reason(written: str, reason: str) -> None:
    with pytest.raises(DocumentError, match=reason) as caught:
        parse(written)
    assert "\n" not in str(caught.value)


# -- drafts -----------------------------------------------------------------------------------------------
DRAFTS = {
    "guide.md": page("Guide", "The guide to the release train."),
    "next.md": page("Next release", "The next release train leaves on Tuesdays.", "status: draft\n"),
}


def test_a_draft_is_skipped_with_its_reason_unless_drafts_are_indexed(tmp_path: Path) -> None:
    root = write(tmp_path / "docs", DRAFTS)
    docs, skipped = load_folder(root, ["**/*.md"], [], RULES, 100_000)
    assert [d.path for d in docs] == ["guide.md"]
    assert skipped == [("next.md", DRAFT_SKIPPED)]
    assert DRAFT_SKIPPED == "draft (status: draft; set DOCSBOT_INDEX_DRAFTS=true to index drafts)"
    docs, skipped = load_folder(root, ["**/*.md"], [], RULES, 100_000, drafts=True)
    assert sorted(d.path for d in docs) == ["guide.md", "next.md"] and skipped == []


def test_docsbot_index_and_sync_leave_drafts_out_unless_configured(tmp_path: Path, embedder: LocalMiniLM) -> None:
    root = write(tmp_path / "docs", DRAFTS)
    settings = make_settings(tmp_path / "index", docs_dir=str(root), default_level="public")
    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    stats = index_folder(engine, lease_config(settings), root)
    assert stats.skipped == [("next.md", DRAFT_SKIPPED)] and set(engine.store.doc_hashes()) == {"guide.md"}

    drafts = settings.model_copy(update={"index_drafts": True})
    assert rag_config(drafts).docs.index_drafts
    report = run_sync(sync_config(drafts), embedder)  # a changed setting: every row is rewritten
    store = Store(settings.data_dir, refresh_s=0)
    assert report.skipped == [] and set(store.doc_hashes()) == {"guide.md", "next.md"}
    statuses = {row["doc_path"]: row["status"] for row in store.chunk_columns(["guide.md", "next.md"], "status")}
    assert statuses == {"guide.md": "", "next.md": "draft"}

    report = run_sync(sync_config(settings), embedder)  # drafts off again: the draft's rows go
    assert report.skipped == [("next.md", DRAFT_SKIPPED)] and set(store.doc_hashes()) == {"guide.md"}


# -- citations ----------------------------------------------------------------------------------------------
DOCS = {
    # The old page answers the question a little better than its replacement (its title is the
    # question's words): without the reorder it would be cited first.
    "deploy.md": page("Deploying billing", "Deploy the billing service to prod with `shipit billing --env prod` "
                      "from the release branch."),
    "deploy-legacy.md": page("Deploying the billing service to prod", "Deploy the billing service to prod with "
                             "`./deploy-billing.sh prod` from the jump host.", "status: deprecated\n"),
    "fax.md": page("Fax machine", "Send a fax from the third floor fax machine: dial 9, then the number, then "
                   "press the green start button.", "deprecated: true\n"),
    "expenses.md": page("Expenses", "Submit expense reports in Expensify within 30 days of the purchase, with "
                        "the receipt attached.", f"last_reviewed: {TWO_YEARS_AGO.isoformat()}\n"),
    "parking.md": page("Parking", "Parking permits for the garage are issued by the front desk on the ground "
                       "floor.", f"last_reviewed: {(TODAY - timedelta(days=100)).isoformat()}\nreview_in: 1 year\n"),
    "lunch.md": page("Lunch", "Lunch is served in the cafeteria from noon to two on weekdays, free for staff.",
                     "last_reviewed: 2020-01-01\nreview_in: 30000\n"),
}


@pytest.fixture
def engine(tmp_path: Path, embedder: LocalMiniLM, monkeypatch: pytest.MonkeyPatch) -> Engine:
    """DOCS in a git repository, every file last committed 500 days ago."""
    repo = new_repo(tmp_path / "repo")
    when = (datetime.now(timezone.utc) - timedelta(days=500)).isoformat(timespec="seconds")
    monkeypatch.setenv("GIT_AUTHOR_DATE", when)
    monkeypatch.setenv("GIT_COMMITTER_DATE", when)
    commit_files(repo, {**DOCS, "office.md": page("Office", "The office opens at eight and closes at seven.")})
    settings = make_settings(tmp_path / "index", default_level="public")
    engine = Engine(rag_config(settings), Store(settings.data_dir), embedder, ExtractiveAnswerer())
    index_folder(engine, lease_config(settings), repo)
    return engine


async def test_a_current_page_is_cited_before_a_deprecated_one(engine: Engine) -> None:
    answer = await engine.ask("How do I deploy the billing service to prod?", Level.public)
    assert answer.answered, answer.detail
    assert answer.citations[0].doc_path == "deploy.md" and "deprecated" not in answer.citations[0].warning
    [legacy] = [c for c in answer.citations if c.doc_path == "deploy-legacy.md"]  # still cited, after it
    assert legacy.warning == "⚠ deprecated"
    retrieval, _, _ = await engine.search("How do I deploy the billing service to prod?", Level.public)
    paths = [c.row["doc_path"] for c in retrieval.selected]
    assert paths.index("deploy.md") < paths.index("deploy-legacy.md")  # both found, the current one first


async def test_a_deprecated_page_alone_answers_with_its_warning(engine: Engine) -> None:
    answer = await engine.ask("How do I send a fax?", Level.public)
    assert answer.answered, answer.detail
    [fax] = [c for c in answer.citations if c.doc_path == "fax.md"]
    assert fax.warning == "⚠ deprecated"
    assert "· ⚠ deprecated ·" in citation_line(fax)
    assert "⚠ deprecated" in answer_message(answer, "A1")["blocks"][1]["text"]["text"]
    assert answer.to_json()["citations"][0]["warning"] == "⚠ deprecated"
    assert re.search(r"\[\d\] Fax machine · ⚠ deprecated · fax\.md", render_answer(answer.to_json()))


async def test_a_page_past_its_review_says_how_old_it_is(engine: Engine) -> None:
    expenses = await engine.ask("How long do I have to submit an expense report?", Level.public)
    assert expenses.answered, expenses.detail
    assert expenses.citations[0].doc_path == "expenses.md"
    assert expenses.citations[0].warning == "⚠ last reviewed 2 years ago"
    assert "⚠ last reviewed 2 years ago" in render_answer(expenses.to_json())

    office = await engine.ask("When does the office open?", Level.public)  # no review: its commit, 500 days ago
    assert office.citations[0].doc_path == "office.md"
    assert re.fullmatch(r"⚠ last updated 1[67] months ago", office.citations[0].warning)

    for question, path in (("Who issues parking permits for the garage?", "parking.md"),  # reviewed 100 days ago
                           ("When is lunch served in the cafeteria?", "lunch.md")):  # review_in 30000 days
        cited = (await engine.ask(question, Level.public)).citations[0]
        assert (cited.doc_path, cited.warning) == (path, "")


def test_a_near_miss_on_a_deprecated_page_says_so() -> None:
    fax = Citation(0, "fax.md", "Fax machine", "", "", "", "", "", 0.4, warning="⚠ deprecated")
    answer = Answer("q", ABSTAIN_MESSAGES["unsure"], False, "no_match", [], Diagnostics(), "public", near_miss=fax)
    assert answer_body(answer) == "I'm not sure the docs answer this. The closest I found: Fax machine (⚠ deprecated)"
    assert render_answer(answer.to_json()).splitlines()[1] == "  closest Fax machine · ⚠ deprecated · fax.md"


def test_age_wording() -> None:
    today = date(2026, 12, 3)
    assert [age_words(today - timedelta(days=n), today) for n in (1, 2, 59)] == ["1 day", "2 days", "59 days"]
    assert age_words(date(2026, 10, 3), today) == "2 months"  # 61 days
    assert age_words(date(2025, 10, 1), today) == "14 months"
    assert age_words(date(2024, 12, 4), today) == "23 months"
    assert age_words(date(2024, 12, 3), today) == "2 years"
    assert age_words(date(2016, 1, 1), today) == "10 years"


async def test_an_older_index_reads_the_new_columns_as_empty(tmp_path: Path) -> None:
    schema = chunk_schema(4)
    full = pa.Table.from_pylist([{
        **{f.name: "" for f in schema if pa.types.is_string(f.type)}, "chunk_id": "c1", "doc_path": "a.md",
        "ordinal": 0, "access_rank": 0, "status": "deprecated", "review_days": 90, "vector": [0.5, 0.5, 0.5, 0.5],
    }], schema=schema)
    store = Store(str(tmp_path / "index"), refresh_s=0)
    store.write(full.drop_columns(["status", "reviewed", "review_days"]), None)  # as an earlier version wrote it
    row = (await store.rows(["c1"]))["c1"]
    assert (row["status"], row["reviewed"], row["review_days"]) == ("", "", 0)
    assert store.chunk_columns(["a.md"], "status", "review_days") == [{"doc_path": "a.md", "status": "",
                                                                       "review_days": 0}]
    assert store.doc_columns("reviewed", "review_days") == {"a.md": ("", 0)}
    store.write(full, None)  # the next write adds the columns
    assert store.doc_columns("status", "review_days") == {"a.md": ("deprecated", 90)}


# -- the docs-gaps report -------------------------------------------------------------------------------------
async def test_gaps_date_a_page_by_its_last_review(engine: Engine, tmp_path: Path) -> None:
    db = await open_state(f"sqlite:///{tmp_path / 'state.db'}")
    clock = Clock(datetime.now(timezone.utc).timestamp())
    try:
        log = AnswerLog(db, clock=clock)
        cited: set[str] = set()
        for question in ("How long do I have to submit an expense report?", "Who issues parking permits?",
                         "When does the office open?", "When is lunch served in the cafeteria?",
                         "How do I send a fax?"):
            answer = await engine.ask(question, Level.public)
            assert answer.answered, answer.detail
            cited |= {c.doc_path for c in answer.citations}
            await log.record(answer, asker="U1", asker_level="public", audience_level="public", public_channel=True)
        now_ms = int((clock.now + 1) * 1000)
        finder = GapFinder(db, engine, GapsConfig(review_days=365))
        report = await finder.report(Level.public, now_ms - 7 * 86_400_000, now_ms, Reader())
        overdue = {o.page.path: o.days_overdue for o in report.overdue}
        # expenses: reviewed 2 years and a month or two ago, + 365; office: committed 500 days ago, + 365;
        # parking (reviewed 100 days ago) and lunch (review_in 30000 days) are not due, though committed
        # 500 days ago
        assert overdue["expenses.md"] == (TODAY - TWO_YEARS_AGO).days - 365 and overdue["office.md"] == 500 - 365
        assert "parking.md" not in overdue and "lunch.md" not in overdue
        # the fax page is cited (an answer relies on it) and committed 500 days ago, but deprecated:
        # retired, not due for review
        assert "fax.md" in cited and "fax.md" not in overdue
        assert {o.page.path: o.page.reviewed for o in report.overdue}["expenses.md"] == TWO_YEARS_AGO.isoformat()
        pages = {p["page"]["path"]: p["page"] for p in report.to_json()["overdue"]}
        assert pages["expenses.md"]["last_reviewed"] == TWO_YEARS_AGO.isoformat()
        # every page but parking and lunch (not due) and the two deprecated ones (retired)
        assert await finder.overdue_total(now_ms) == len(DOCS) + 1 - 2 - 2
    finally:
        await db.close()
