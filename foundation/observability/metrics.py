"""Every Prometheus metric of docsbot, defined in this one place, and the few helpers that feed them.

All series are prefixed `docsbot_` and live in prometheus-client's default registry; the bot
serves them at `/metrics` on its HTTP port, the sync worker on `DOCSBOT_METRICS_PORT`. Labels
carry only bounded values (surfaces, outcomes, fixed abstention reasons, stage names, error
kinds, Slack method names and error codes): never user text or IDs.
"""
from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST, REGISTRY, Counter, Gauge, Histogram, generate_latest, start_http_server,
)
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from rag import ABSTAIN_MESSAGES, LLM_ERROR_KINDS, install_events
from sync.events import install as install_sync_events

# -- questions (`surface`: the names in bot/surfaces.py, handed to declare_surfaces) -------------
QUESTIONS = Counter(
    "docsbot_questions_total", "Questions by surface and outcome (answered, abstained, failed) with the reason",
    ["surface", "outcome", "reason"],
)
# MCP (agents/): tool calls by the caller's level, and requests refused before any tool ran.
MCP_CALLS = Counter("docsbot_mcp_calls_total", "MCP tool calls by tool, the caller's level and outcome (ok, error)",
                    ["tool", "level", "outcome"])
MCP_REFUSED = Counter("docsbot_mcp_refused_total",
                      "MCP requests refused by reason (token, owner_unconfirmed, rate_limit, auth_failures, stopping)",
                      ["reason"])
MCP_TOKEN_LOOKUPS = Counter("docsbot_mcp_token_lookups_total", "Tokens /mcp looked up in the state database")
STAGE_SECONDS = Histogram(
    "docsbot_stage_seconds", "Latency of one answering stage (embed, retrieve, rerank, generate, post, total)",
    ["stage"], buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60),
)
FIRST_REPLY_SECONDS = Histogram(
    "docsbot_event_to_first_reply_seconds", "From the Slack request reaching the bot to its first visible reply",
    ["surface"], buckets=(0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10, 30),
)
QUEUE_DEPTH = Gauge("docsbot_answers_in_progress", "Answers being worked on now (background tasks)")
QUEUE_WAITING = Gauge("docsbot_questions_waiting", "Questions waiting in line for an answer slot")
QUEUE_WAIT_SECONDS = Histogram("docsbot_queue_wait_seconds", "Time a question waited in line for an answer slot",
                               buckets=(0.1, 0.5, 1, 2, 5, 10, 20, 30, 60, 120))
REJECTED_BUSY = Counter("docsbot_questions_rejected_busy_total",
                        "Questions turned away because every answer slot was taken")
FEEDBACK_VOTES = Counter("docsbot_feedback_votes_total",
                         "Feedback votes by vote (up, down) and source (button, reaction)", ["vote", "source"])

# -- outside services ------------------------------------------------------------------------------
LLM_CALLS = Counter("docsbot_llm_calls_total", "Chat-completion attempts sent to the LLM endpoint")
LLM_ERRORS = Counter("docsbot_llm_errors_total", "Failed LLM attempts by kind", ["kind"])
LLM_RETRIES = Counter("docsbot_llm_retries_total", "LLM attempts retried, by the kind of the failure retried", ["kind"])
LLM_TOKENS = Counter("docsbot_llm_tokens_total",
                     "Tokens of chat completions, by kind (prompt, completion): as the endpoint reported them, "
                     "else as counted", ["kind"])
EMBEDDING_CALLS = Counter("docsbot_embedding_calls_total", "Requests sent to the embeddings endpoint")
EMBEDDING_ERRORS = Counter("docsbot_embedding_errors_total", "Failed embeddings requests by kind", ["kind"])
EMBEDDING_RETRIES = Counter("docsbot_embedding_retries_total",
                            "Embeddings requests retried, by the kind of the failure retried", ["kind"])
SLACK_API_ERRORS = Counter("docsbot_slack_api_errors_total", "Slack Web API calls that failed, by method and error",
                           ["method", "error"])

# -- sync and the index ----------------------------------------------------------------------------
SYNC_RUNS = Counter("docsbot_sync_runs_total", "Syncs by outcome (ok, failed)", ["outcome"])
SYNC_SECONDS = Histogram("docsbot_sync_duration_seconds", "Duration of a sync",
                         buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800))
SYNC_FILES = Counter("docsbot_sync_files_total", "Files changed by syncs, by change", ["change"])
SYNC_CHUNKS = Counter("docsbot_sync_chunks_total", "Chunks written by syncs: embedded anew or reused from the cache",
                      ["source"])
INDEX_CHUNKS = Gauge("docsbot_index_chunks", "Chunks in the index being served")
INDEX_COMMIT_AGE = Gauge("docsbot_index_commit_age_seconds", "Now minus the commit date of what is being served")
SYNC_AGE = Gauge("docsbot_seconds_since_last_successful_sync", "Now minus the end of the last successful sync")

# -- docs gaps (bot/digest.py, refreshed hourly by the bot) ------------------------------------------
# `area` is a docs area (front matter `area`, else the page's first folder; "none" when no page
# comes close): a value the docs define, bounded by them.
UNANSWERED_RATIO = Gauge("docsbot_unanswered_ratio",
                         "Share of the last 7 days' questions the docs could not answer, by docs area", ["area"])
DOCS_OVERDUE = Gauge("docsbot_docs_overdue_total",
                     "Indexed pages whose last commit is older than DOCSBOT_REVIEW_DAYS (overdue for review)")

_FILE_CHANGES = ("added", "modified", "deleted", "renamed")
STAGES = ("embed", "retrieve", "rerank", "generate", "post", "total")
FAILURES = ("error", "restarted", "orphaned", "rate_limited", "busy", "thread_unread")


def _declare_series() -> None:
    """Every bounded label combination exists from the start at 0, so a rate() or an alert on
    a series sees it before its first event (Slack errors are the one open-ended set); the
    surfaces' series wait for declare_surfaces."""
    for stage in STAGES:
        STAGE_SECONDS.labels(stage)
    for vote in ("up", "down"):
        for source in ("button", "reaction"):
            FEEDBACK_VOTES.labels(vote, source)
    for kind in LLM_ERROR_KINDS:
        for series in (LLM_ERRORS, LLM_RETRIES, EMBEDDING_ERRORS, EMBEDDING_RETRIES):
            series.labels(kind)
    for kind in ("prompt", "completion"):
        LLM_TOKENS.labels(kind)
    for outcome in ("ok", "failed"):
        SYNC_RUNS.labels(outcome)
    for change in _FILE_CHANGES:
        SYNC_FILES.labels(change)
    for source in ("embedded", "reused"):
        SYNC_CHUNKS.labels(source)


_declare_series()


def declare_surfaces(names: Iterable[str]) -> None:
    """Each surface's question series at 0, like _declare_series's: the names come from the
    surfaces (bot/surfaces.py), a layer above this one, through the process that serves /metrics."""
    for surface in names:
        QUESTIONS.labels(surface, "answered", "")
        for reason in ABSTAIN_MESSAGES:
            QUESTIONS.labels(surface, "abstained", reason)
        for reason in FAILURES:
            QUESTIONS.labels(surface, "failed", reason)
        FIRST_REPLY_SECONDS.labels(surface)


_index_times: dict[str, float] = {}
# Held while a sync publishes its series and while a scrape reads them, so a scrape sees a sync
# whole or not at all (never a counted run beside the index gauges of the index before it).
_PUBLISH = threading.Lock()


class _Consistent:
    """`registry` collected under _PUBLISH: what both /metrics endpoints serve."""

    def __init__(self, registry: Collector) -> None:
        self._registry = registry

    def collect(self) -> Iterable[Metric]:
        with _PUBLISH:
            return list(self._registry.collect())

    def restricted_registry(self, names: Iterable[str]) -> _Consistent:
        """prometheus-client's server calls this for `/metrics?name[]=...`."""
        return _Consistent(REGISTRY.restricted_registry(names))


_SCRAPED = _Consistent(REGISTRY)


def _age(key: str) -> float:
    at = _index_times.get(key)
    return time.time() - at if at is not None else math.nan


INDEX_COMMIT_AGE.set_function(lambda: _age("commit"))
SYNC_AGE.set_function(lambda: _age("sync"))


def serve_metrics(port: int) -> None:
    """/metrics on its own port, from a daemon thread (the sync worker has no web app)."""
    start_http_server(port, registry=_SCRAPED)


def observe_answer(surface: str, answered: bool, reason: str | None, timings_ms: dict[str, float]) -> None:
    """One question's outcome and its stage timings (the engine's `diagnostics.timings_ms`)."""
    QUESTIONS.labels(surface, "answered" if answered else "abstained", reason or "").inc()
    for key, ms in timings_ms.items():
        STAGE_SECONDS.labels(key.removesuffix("_ms")).observe(ms / 1000)


def observe_failure(surface: str, reason: str) -> None:
    QUESTIONS.labels(surface, "failed", reason).inc()


def observe_sync_ok(report: Any, meta: dict[str, Any], chunks: int) -> None:
    """One good sync, published in one step: the index it left (`chunks` rows, the commit date
    in the store's `meta`), the files and chunks its `report` (a sync.report.SyncReport) changed,
    its duration, and last the run itself. A scrape that counts the run sees all of the rest."""
    with _PUBLISH:
        _set_index(meta, chunks)
        _index_times["sync"] = time.time()  # the sync worker's own series; any process reads the state store
        for change in _FILE_CHANGES:
            SYNC_FILES.labels(change).inc(getattr(report, change))
        SYNC_CHUNKS.labels("embedded").inc(report.chunks_embedded)
        SYNC_CHUNKS.labels("reused").inc(report.chunks_reused)
        SYNC_SECONDS.observe(report.seconds)
        SYNC_RUNS.labels("ok").inc()


def observe_sync_failed(seconds: float) -> None:
    with _PUBLISH:
        SYNC_SECONDS.observe(seconds)
        SYNC_RUNS.labels("failed").inc()


def observe_index(meta: dict[str, Any], chunks: int) -> None:
    """The served index's size and commit date (from the store's meta)."""
    with _PUBLISH:
        _set_index(meta, chunks)


def _set_index(meta: dict[str, Any], chunks: int) -> None:
    INDEX_CHUNKS.set(chunks)
    at = _timestamp(meta.get("commit_date"))
    if at is None:
        _index_times.pop("commit", None)
    else:
        _index_times["commit"] = at


def _timestamp(value: object) -> float | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def observe_gaps(unanswered_ratio: dict[str, float], overdue: int) -> None:
    """The gap gauges, replaced as a whole: an area with no question this week has no series."""
    with _PUBLISH:
        UNANSWERED_RATIO.clear()
        for area, ratio in unanswered_ratio.items():
            UNANSWERED_RATIO.labels(area or "none").set(ratio)
        DOCS_OVERDUE.set(overdue)


def exposition() -> tuple[bytes, str]:
    """The scrape body and its content type."""
    return generate_latest(_SCRAPED), CONTENT_TYPE_LATEST


class _Counted:
    """What rag (LLM and embeddings attempts, tokens) and sync (each sync's outcome) report,
    counted in the series above."""

    def llm_attempt(self) -> None:
        LLM_CALLS.inc()

    def llm_failed(self, kind: str) -> None:
        LLM_ERRORS.labels(kind).inc()

    def llm_retried(self, kind: str) -> None:
        LLM_RETRIES.labels(kind).inc()

    def llm_tokens(self, prompt: int, completion: int) -> None:
        LLM_TOKENS.labels("prompt").inc(prompt)
        LLM_TOKENS.labels("completion").inc(completion)

    def embedding_attempt(self) -> None:
        EMBEDDING_CALLS.inc()

    def embedding_failed(self, kind: str) -> None:
        EMBEDDING_ERRORS.labels(kind).inc()

    def embedding_retried(self, kind: str) -> None:
        EMBEDDING_RETRIES.labels(kind).inc()

    def sync_ok(self, report: Any, meta: dict[str, Any], chunks: int) -> None:
        observe_sync_ok(report, meta, chunks)

    def sync_failed(self, seconds: float) -> None:
        observe_sync_failed(seconds)


# The libraries report to no-ops until an application installs its own events: every process that
# serves /metrics imports this module, so importing it is what turns the counting on.
install_events(_Counted())
install_sync_events(_Counted())
