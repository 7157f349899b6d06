"""The limits the settings are checked against (foundation/settings.py): each numeric setting's range,
the citation-link presets and what their templates may name. A table apart from the settings
themselves, so that a new setting's range is one line here."""
from __future__ import annotations

import re

LINK_PRESETS = {
    "github": "{repo_web}/blob/{commit}/{path}#{anchor}",
    "gitlab": "{repo_web}/-/blob/{commit}/{path}#{anchor}",
}


LINK_PLACEHOLDERS = {"repo_web", "commit", "path", "anchor"}
LANGUAGE_TAG = re.compile(r"[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*")  # BCP 47's shape: language, then subtags
# Allowed range of every numeric setting (inclusive). Out of range is one error line naming the
# variable, instead of a hang (chunk size 0), an OverflowError (a port over 65535) or a silently
# meaningless value (a similarity of 7). The upper bounds are far above any sensible value.
DAY_S = 86_400.0
BOUNDS: dict[str, tuple[float, float]] = {
    "max_file_bytes": (1, 1_000_000_000),
    "proposals_per_day": (1, 10_000),
    "chunk_size": (50, 100_000),
    "chunk_overlap": (0, 100_000),
    "embedding_dim": (1, 65_536),
    "embedding_threads": (0, 1_024),  # 0: one per core for bulk indexing
    "embedding_batch": (1, 4_096),
    "embedding_save_s": (0.1, DAY_S),
    "llm_attempt_timeout_s": (0.001, DAY_S),
    "llm_total_timeout_s": (0.001, DAY_S),
    "llm_max_retries": (0, 100),
    "llm_max_tokens": (1, 1_000_000),
    "llm_context_tokens": (0, 100_000_000),
    "top_k": (1, 1_000),
    "candidates": (1, 10_000),
    "min_similarity": (0, 1),
    "rrf_k": (0, 1_000_000),
    "list_weights": (0, 1_000),  # each list's weight (DOCSBOT_LIST_WEIGHTS)
    "mmr_lambda": (0, 1),
    "no_access_margin": (0, 1),
    "context_budget_chars": (100, 10_000_000),
    "ann_min_rows": (1, 1_000_000_000),
    "port": (1, 65_535),
    "http_max_connections": (1, 1_000_000),
    "bot_lookup_ttl_s": (0.001, 30 * DAY_S),
    "audience_fresh_s": (0, 30 * DAY_S),
    "bot_user_questions_per_minute": (1, 100_000),
    "bot_max_concurrent_answers": (1, 100_000),
    "bot_dedupe_ttl_s": (0.001, 30 * DAY_S),
    "followup_hours": (0, 24 * 365),  # 0: no follow-ups without a mention
    "mcp_token_days": (1, 3_650),
    "mcp_calls_per_minute": (1, 100_000),
    "mcp_owner_fresh_s": (0, 30 * DAY_S),  # 0: confirmed with Slack on every call
    "mcp_auth_failures_per_minute": (1, 100_000),
    "mcp_auth_failures_per_minute_all": (1, 1_000_000),
    "sync_interval_minutes": (0.01, 525_600),  # up to a year
    "sync_jitter_s": (0, DAY_S),
    "sync_fetch_retries": (0, 100),
    "sync_retry_backoff_s": (0, 3_600),
    "git_timeout_s": (0.001, DAY_S),
    "watch_debounce_ms": (1, 3_600_000),
    "answer_log_days": (0, 365_000),
    "queue_max": (0, 1_000_000),
    "queue_wait_s": (0, DAY_S),
    "index_refresh_s": (0, DAY_S),
    "sync_lease_ttl_s": (1, DAY_S),
    "sync_lease_renew_s": (0.1, DAY_S),
    "sync_request_poll_s": (0.05, 3_600),
    "metrics_port": (0, 65_535),  # 0: no metrics server in the sync worker
    "drain_s": (0, 300),
    "fusion_coverage_power": (0, 10),
    "doc_fusion": (0, 1),
    "max_chunks_per_doc": (0, 1_000),  # 0: no cap
    "followup_rewrite_timeout_s": (0.001, 300),
    "rerank_timeout_s": (0.001, 300),
    "rerank_top_n": (1, 10_000),
    "review_days": (1, 36_500),
}


def number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) or value != int(value) else f"{int(value):,}"
