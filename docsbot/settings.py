"""One typed settings object, read from the environment (and an optional .env file).

Variables are `DOCSBOT_*` plus the standard `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `SLACK_*` and
`PORT`. Secrets are `SecretStr`, so they never print in a repr, a log line or an error.
"""
from __future__ import annotations

from typing import Literal

from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from rag.levels import Level

LINK_PRESETS = {
    "github": "{repo_web}/blob/{commit}/{path}#{anchor}",
    "gitlab": "{repo_web}/-/blob/{commit}/{path}#{anchor}",
}


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DOCSBOT_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    # Where the index lives: a folder or any LanceDB URI (s3://..., gs://...).
    data_dir: str = ".docsbot"
    # The docs folder indexed by `docsbot index` / `run` when --docs is not given.
    docs_dir: str = "docs-sync"
    # Level of a document with no `access` in its front matter and no matching path rule.
    default_level: Level = Level.restricted
    # Path rules, JSON: {"glob": "level"}, first match wins, e.g. {"public/**": "public"}.
    path_levels: dict[str, Level] = Field(default_factory=dict)
    include: list[str] = Field(default_factory=lambda: ["**/*.md", "**/*.txt"])
    exclude: list[str] = Field(default_factory=list)
    max_file_bytes: int = 1_000_000

    chunk_size: int = 1000
    chunk_overlap: int = 150

    embedding_provider: Literal["local", "openai"] = "local"
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_dim: int = 384
    embedding_threads: int = 1
    embedding_batch: int = 32

    chat_model: str = "gpt-4o-mini"
    openai_api_key: SecretStr | None = Field(default=None, validation_alias=_env("OPENAI_API_KEY"))
    openai_base_url: str | None = Field(default=None, validation_alias=_env("OPENAI_BASE_URL"))
    llm_attempt_timeout_s: float = 20.0
    llm_total_timeout_s: float = 45.0
    llm_max_retries: int = 2
    llm_max_tokens: int = 600

    top_k: int = 4
    candidates: int = 32
    min_similarity: float = 0.32
    rrf_k: int = 10
    dense_weight: float = 1.0
    bm25_weight: float = 1.5
    mmr_lambda: float = 0.75
    # -- Retrieval adaptation (rag/retrieval.py; defaults chosen by `python -m eval sweep` on the
    # macro average of the three dev sets, which preferred fixed weights and chunk-level fusion).
    # The full-text list's fusion weight is scaled by its top hit's term coverage to this power
    # (0 = fixed weights); a chunk's fused score mixes in this share of its document's (fused at
    # the document level); the final k takes at most this many chunks of one document (0 = any).
    fusion_coverage_power: float = 0.0
    doc_fusion: float = 0.0
    max_chunks_per_doc: int = 1
    # Answerability: the parameter file written by `python -m eval calibrate` (empty: the one in
    # the package, rag/answerability.json). A question below its threshold gets "I don't know".
    answerability_file: str = ""
    # Follow-ups: with an LLM endpoint, one call rewrites a follow-up into a standalone query;
    # past this many seconds the heuristic is used instead.
    followup_rewrite_timeout_s: float = 4.0
    # Reranker: any `/rerank` endpoint (Cohere, Jina, TEI, vLLM) reorders the best fused
    # candidates; on a failure or past the timeout the fused order is kept (counted).
    rerank_url: str = ""
    rerank_model: str = ""
    rerank_api_key: SecretStr | None = None
    rerank_timeout_s: float = 2.0
    rerank_top_n: int = 16
    no_access_margin: float = 0.05
    context_budget_chars: int = 6000
    # Fill the rest of the context budget with the best document's other chunks (rag/engine.py).
    expand_top_doc: bool = True
    # Say "the docs that cover this are above your level" (True) or just "I don't know" (False).
    access_hint: bool = True
    # Build an ANN index once the table has this many rows, and use it for a search whose access
    # filter passes this many (below it a flat scan is as fast, and exact). `python -m eval bench`
    # measured the crossover at ~2k-4k passing rows; 5k leaves a margin for noise.
    ann_min_rows: int = 5_000

    # Citation links: template with {repo_web} {commit} {path} {anchor}, or a preset name.
    repo_web: str = ""
    link_template: str = "github"
    # Path of the docs folder inside the repository, prefixed to doc paths in links.
    repo_subdir: str = ""

    @field_validator("default_level", mode="before")
    @classmethod
    def _level(cls, value: object) -> object:
        return Level.parse(value) if isinstance(value, str) else value

    @field_validator("path_levels", mode="before")
    @classmethod
    def _path_levels(cls, value: object) -> object:
        if isinstance(value, dict):
            return {k: Level.parse(v) if isinstance(v, str) else v for k, v in value.items()}
        return value

    @property
    def use_llm(self) -> bool:
        """The OpenAI-compatible endpoint is used when a base URL or key is configured."""
        return bool(self.openai_base_url or self.openai_api_key)

    @property
    def link_pattern(self) -> str:
        return LINK_PRESETS.get(self.link_template, self.link_template)

    # -- Slack bot (bot/) ------------------------------------------------------------------------
    # `docsbot serve` needs the bot token and signing secret; with an app token (xapp-) it uses
    # Socket Mode instead of HTTP. SLACK_API_URL points the Web API client at a stand-in.
    slack_bot_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_BOT_TOKEN"))
    slack_signing_secret: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_SIGNING_SECRET"))
    slack_app_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_APP_TOKEN"))
    slack_api_url: str = Field(default="https://slack.com/api/", validation_alias=_env("SLACK_API_URL"))
    port: int = Field(default=3000, validation_alias=_env("PORT"))
    # TOML file mapping users, groups, email domains and channels to levels (see bot/access.py).
    access_file: str = ""
    # How long user levels, group members and channel audiences are cached.
    bot_lookup_ttl_s: float = 300.0
    # Questions one person may ask per minute, and answers generated at once (over it: "busy").
    bot_user_questions_per_minute: int = 6
    bot_max_concurrent_answers: int = 8
    # Slack retries a delivery for up to ~5 minutes; event ids are remembered this long.
    bot_dedupe_ttl_s: float = 900.0

    # -- Git docs sync (sync/) ---------------------------------------------------------------------
    # The docs repository: a URL (https://user:token@host/org/repo.git, git@host:org/repo.git) or a
    # local path. Unset: `docsbot sync` reconciles the local DOCSBOT_DOCS_DIR folder instead.
    repo: SecretStr | None = None
    # Branch to follow; empty means the remote's default branch (its HEAD).
    branch: str = ""
    # Private working copy and lock file; default `<data_dir>/sync` (required when data_dir is a URI).
    work_dir: str = ""
    # Scheduled syncs: every N minutes, or a 5-field cron expression (wins when set), with jitter.
    sync_interval_minutes: float = 5.0
    sync_cron: str = ""
    sync_jitter_s: int = 30
    # A failed fetch is retried this many times with exponential backoff before the sync fails.
    sync_fetch_retries: int = 3
    sync_retry_backoff_s: float = 2.0
    git_timeout_s: float = 300.0
    # Shared secret of the push webhook (GitHub X-Hub-Signature-256 or GitLab X-Gitlab-Token).
    webhook_secret: SecretStr | None = None
    # The folder watcher waits for this long without changes before reindexing a burst.
    watch_debounce_ms: int = 1600
    # Fault injection for crash tests: the sync process kills itself (SIGKILL) at this point,
    # "before-write" (working copy at the new head, index untouched) or "after-write" (chunks
    # written, indexed commit not yet recorded). Empty in production.
    sync_kill_at: Literal["", "before-write", "after-write"] = ""

    # -- Answer log and feedback (rag/answer_log.py, eval/feedback_cli.py) -------------------------
    # Days answers (and the feedback on them) are kept in the `answers`/`feedback` tables beside
    # the index; older rows are deleted on a later write. 0 keeps everything.
    answer_log_days: int = 90
