"""One typed settings object, read from the environment (and an optional .env file).

Variables are `DOCSBOT_*` plus the standard `OPENAI_API_KEY`, `OPENAI_BASE_URL`, `SLACK_*` and
`PORT`. Secrets are `SecretStr`, so they never print in a repr, a log line or an error.
"""
from __future__ import annotations

import json
import string
from typing import Annotated, Literal
from urllib.parse import urlsplit

from pydantic import AliasChoices, Field, SecretStr, ValidationInfo, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from foundation.settings_bounds import BOUNDS, LANGUAGE_TAG, LINK_PLACEHOLDERS, LINK_PRESETS, number
from rag import Level, check_pattern, provider_names
from rag import default_include, default_weights

__all__ = ["BOUNDS", "LINK_PLACEHOLDERS", "LINK_PRESETS", "Settings"]


_WEIGHTS_EXAMPLE = ",".join(f"{name}={weight}" for name, weight in default_weights().items())


def _env(name: str) -> AliasChoices:
    return AliasChoices(name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="DOCSBOT_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    # Where the index lives: a folder or any LanceDB URI (s3://..., gs://...).
    data_dir: str = ".docsbot"
    # The index in a database instead of data_dir: postgresql://user:password@host/db (pgvector
    # 0.8+; its tables come with the state migrations, `docsbot migrate`). Secret (password).
    index_url: SecretStr | None = None
    # The docs folder indexed by `docsbot index` / `run` when --docs is not given.
    docs_dir: str = "docs-sync"
    # Level of a document with no `access` in its front matter and no matching path rule.
    default_level: Level = Level.restricted
    # Path rules, JSON: {"glob": "level"}, first match wins, e.g. {"public/**": "public"}.
    path_levels: dict[str, Level] = Field(default_factory=dict)
    include: list[str] = Field(default_factory=lambda: list(default_include()))  # every format's suffix
    exclude: list[str] = Field(default_factory=list)
    max_file_bytes: int = 1_000_000
    # The language the docs without a language marker (`page.ja.md`, `i18n/ja/...`) are written in,
    # e.g. `en`; empty: the docs' default language is the most common one, the unmarked counted as it.
    docs_language: str = ""
    # Index pages whose front matter says `status: draft` (off: they are skipped, with the reason).
    index_drafts: bool = False

    chunk_size: int = 1000
    chunk_overlap: int = 150

    embedding_provider: Literal["local", "openai"] = "local"
    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_dim: int = 384
    # -- Bulk embedding (rag/embeddings.py, rag/indexer.py) -----------------------------------------
    # Batches embedded at once by index and sync; 0 = auto: every core, or all but one in a process
    # that also answers questions (the bot), so query embedding stays fast during a sync.
    embedding_threads: int = 0
    # Texts per batch (local model: length-bucketed; OpenAI-compatible endpoint: per request).
    embedding_batch: int = 16
    # Seconds between saves of new vectors to the index's cache while a long run embeds (besides one
    # per 512 chunks): the most embedding a killed index or sync does again. Each save is a commit
    # to the cache table, and their count, not the repository, drove a first sync's memory.
    embedding_save_s: float = 30.0

    chat_model: str = "gpt-4o-mini"
    # The chat provider (rag/providers): `openai` is any OpenAI-compatible endpoint. Every provider
    # reads the endpoint's key, URL and model from OPENAI_API_KEY, OPENAI_BASE_URL, DOCSBOT_CHAT_MODEL.
    llm_provider: str = "openai"
    openai_api_key: SecretStr | None = Field(default=None, validation_alias=_env("OPENAI_API_KEY"))
    openai_base_url: str | None = Field(default=None, validation_alias=_env("OPENAI_BASE_URL"))
    llm_attempt_timeout_s: float = 20.0
    llm_total_timeout_s: float = 45.0
    llm_max_retries: int = 2
    llm_max_tokens: int = 600
    # The chat model's context window in tokens; 0: as the endpoint says (vLLM, llama.cpp's C++
    # server), or as its refusal of a longer prompt names it (OpenAI, llama-cpp-python).
    llm_context_tokens: int = 0

    top_k: int = 4
    candidates: int = 32
    min_similarity: float = 0.32
    rrf_k: int = 10
    # Each ranked list's fusion weight (weighted RRF), by the list's name (rag/signals.py), as
    # `dense=1,bm25=1.5` or JSON; a list not named keeps its default.
    list_weights: Annotated[dict[str, float], NoDecode] = Field(default_factory=default_weights)
    # Retired: DOCSBOT_DENSE_WEIGHT / DOCSBOT_BM25_WEIGHT are DOCSBOT_LIST_WEIGHTS's entries now; either
    # set is an error that says so, rather than a weight silently left at its default.
    dense_weight: str | None = Field(default=None, repr=False)
    bm25_weight: str | None = Field(default=None, repr=False)
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
    # The published docs site: citations link to its pages (rag/site.py), the commit one click
    # away. Empty: commit permalinks only. The layout names the generator (auto: recognised from
    # the docs folder's mkdocs.yml, docusaurus.config.*, conf.py, antora.yml, Hugo or Nextra config).
    site_url: str = ""
    site_layout: Literal["auto", "mkdocs", "docusaurus", "nextra", "nextjs", "sphinx", "sphinx-dirhtml", "antora",
                         "antora-indexify", "hugo", "middleman", "jekyll", "vitepress", "gitbook"] = "auto"
    # The site's URL rule when no generator is recognised: `https://docs.example.com/{path}.html#{anchor}`,
    # {path} the file's path without the source root and its template extensions. Wins over site_url.
    site_url_template: str = ""

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

    # -- validation: ranges and cross-field rules, each failure one line naming the variable -----
    @field_validator(*BOUNDS, mode="after")
    @classmethod
    def _in_range(cls, value: float | dict[str, float], info: ValidationInfo) -> float | dict[str, float]:
        """A number, or each number of a mapping (named in the message), within its bounds."""
        assert info.field_name is not None  # a field validator
        low, high = BOUNDS[info.field_name]
        for name, each in value.items() if isinstance(value, dict) else [("", value)]:
            if not low <= each <= high:  # also rejects nan
                raise ValueError(f"must be between {number(low)} and {number(high)}, got "
                                 + (f"{name}={each}" if name else f"{each}"))
        return value

    @field_validator("list_weights", mode="before")
    @classmethod
    def _list_weights_text(cls, value: object) -> object:
        """The variable's text: `dense=1,bm25=1.5`, or a JSON object."""
        if not isinstance(value, str):
            return value
        if value.strip().startswith("{"):
            try:
                return json.loads(value)
            except json.JSONDecodeError as exc:
                raise ValueError(f"not valid JSON ({exc})") from None
        pairs = [part.partition("=") for part in value.split(",") if part.strip()]
        if any(not sep or not name.strip() for name, sep, _ in pairs):
            raise ValueError(f"must be list=weight pairs like {_WEIGHTS_EXAMPLE}, got {value!r}")
        return {name.strip(): weight.strip() for name, _, weight in pairs}

    @field_validator("list_weights", mode="after")
    @classmethod
    def _list_weights(cls, value: dict[str, float]) -> dict[str, float]:
        """Known lists only; the others at their defaults; not every weight 0."""
        defaults = default_weights()
        if unknown := sorted(set(value) - set(defaults)):
            raise ValueError(f"no list named {', '.join(unknown)} (the lists: {', '.join(defaults)})")
        weights = defaults | value
        if not any(weights.values()):
            raise ValueError("the lists' weights cannot all be 0")
        return weights

    @field_validator("dense_weight", "bm25_weight", mode="after")
    @classmethod
    def _retired_weight(cls, value: str | None, info: ValidationInfo) -> None:
        if value is None:
            return None
        assert info.field_name is not None  # a field validator
        raise ValueError(f"replaced by DOCSBOT_LIST_WEIGHTS, e.g. DOCSBOT_LIST_WEIGHTS="
                         f"{info.field_name.removesuffix('_weight')}={value.strip() or 1}")

    @field_validator("include", "exclude", mode="after")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        return [check_pattern(p) for p in value]

    @field_validator("path_levels", mode="after")
    @classmethod
    def _rule_patterns(cls, value: dict[str, Level]) -> dict[str, Level]:
        for pattern in value:
            check_pattern(pattern)
        return value

    @field_validator("llm_provider", mode="after")
    @classmethod
    def _llm_provider(cls, value: str) -> str:
        if value not in provider_names():
            raise ValueError(f"unknown chat provider {value!r}: one of {', '.join(provider_names())}")
        return value

    @field_validator("docs_language", mode="after")
    @classmethod
    def _docs_language(cls, value: str) -> str:
        """A BCP-47 language tag (`en`, `pt-BR`), written the canonical way, or empty."""
        tag = value.strip().replace("_", "-")
        if tag and not LANGUAGE_TAG.fullmatch(tag):
            raise ValueError(f"must be a language tag like en or pt-BR, got {value!r}")
        parts = tag.split("-") if tag else []
        return "-".join([p.lower() for p in parts[:1]] + [p.title() if len(p) == 4 else p.upper() for p in parts[1:]])

    @field_validator("repo_subdir", mode="after")
    @classmethod
    def _subdir(cls, value: str) -> str:
        check_pattern(value.strip("/"))
        return value

    @field_validator("site_url", mode="after")
    @classmethod
    def _site_url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        web = parts.scheme in ("http", "https") and parts.netloc and not (parts.query or parts.fragment)
        if value.strip() and not web:
            raise ValueError(f"must be the site's http(s) address, like https://docs.example.com/, got {value!r}")
        return value.strip()

    @field_validator("site_url_template", mode="after")
    @classmethod
    def _site_url_template(cls, value: str) -> str:
        value = value.strip()
        try:
            names = {name for _, name, _, _ in string.Formatter().parse(value) if name is not None}
        except ValueError as exc:
            raise ValueError(f"not a valid template ({exc})") from None
        if value and (not value.startswith(("https://", "http://")) or "path" not in names
                      or names - {"path", "anchor"}):
            raise ValueError("must be an http(s) address with {path} (and optionally {anchor}), like "
                             f"https://docs.example.com/{{path}}.html#{{anchor}}, got {value!r}")
        return value

    @field_validator("link_template", mode="after")
    @classmethod
    def _link_template(cls, value: str) -> str:
        try:
            fields = string.Formatter().parse(LINK_PRESETS.get(value, value))
            names = {name for _, name, _, _ in fields if name is not None}
        except ValueError as exc:
            raise ValueError(f"not a valid template ({exc})") from None
        unknown = names - LINK_PLACEHOLDERS
        if unknown:
            known = ", ".join("{" + n + "}" for n in sorted(LINK_PLACEHOLDERS))
            raise ValueError(f"unknown placeholder {{{sorted(unknown)[0]}}}: "
                             f"use {known} or a preset ({', '.join(LINK_PRESETS)})")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "Settings":
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(f"DOCSBOT_CHUNK_OVERLAP ({self.chunk_overlap}) must be smaller than "
                             f"DOCSBOT_CHUNK_SIZE ({self.chunk_size})")
        if self.top_k > self.candidates:
            raise ValueError(f"DOCSBOT_TOP_K ({self.top_k}) must not exceed DOCSBOT_CANDIDATES ({self.candidates})")
        if self.sources and self.repo is not None:
            raise ValueError("DOCSBOT_SOURCES and DOCSBOT_REPO are both set: name the repository as a [[source]] "
                             "in the sources file, or unset DOCSBOT_SOURCES")
        if self.sync_lease_renew_s >= self.sync_lease_ttl_s:
            raise ValueError(f"DOCSBOT_SYNC_LEASE_RENEW_S ({self.sync_lease_renew_s}) must be shorter than "
                             f"DOCSBOT_SYNC_LEASE_TTL_S ({self.sync_lease_ttl_s})")
        return self

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
    # `docsbot doctor` reads the installed app's manifest (apps.manifest.export) with an app
    # configuration token (xoxe.xoxp-…, valid 12 hours) and the app's id (Basic Information).
    slack_config_token: SecretStr | None = Field(default=None, validation_alias=_env("SLACK_CONFIG_TOKEN"))
    slack_app_id: str = Field(default="", validation_alias=_env("SLACK_APP_ID"))
    slack_api_url: str = Field(default="https://slack.com/api/", validation_alias=_env("SLACK_API_URL"))
    port: int = Field(default=3000, validation_alias=_env("PORT"))
    # The address `docsbot serve` listens on (127.0.0.1: this host only), and how many HTTP
    # connections it holds at once (over it, the longest idle one is closed; bot/http_guard.py).
    host: str = "0.0.0.0"
    http_max_connections: int = 512
    # TOML file mapping users, groups, email domains and channels to levels (see bot/access.py).
    access_file: str = ""
    # How long user levels, group members and channel audiences are cached.
    bot_lookup_ttl_s: float = 300.0
    # An answer above `public` in a conversation others read re-confirms its audience with Slack
    # when it was last confirmed longer ago than this (an audience change Slack never delivered).
    audience_fresh_s: float = 30.0
    # Questions one person may ask per minute, and answers generated at once (more wait in line).
    bot_user_questions_per_minute: int = 6
    bot_max_concurrent_answers: int = 8
    # Questions waiting for an answer slot (over it: "busy"), and how long one may wait.
    queue_max: int = 200
    queue_wait_s: float = 120.0
    # Stream answers into Slack as the model writes them (when the endpoint streams).
    llm_stream: bool = True
    # Slack retries a delivery for up to ~5 minutes; event ids are remembered this long.
    bot_dedupe_ttl_s: float = 900.0
    # A follow-up in a channel thread is answered without a mention within this many hours of the
    # bot's last answer to that person there (bot/followups.py); 0 turns follow-ups off.
    followup_hours: float = 24.0

    # -- MCP (agents/): `/mcp` on `docsbot serve`, with tokens people get from `/docs token` --------
    # A token expires this many days after it was made; a token may make this many requests a minute
    # (all replicas together): each tool call is one, and an agent's session opens with two or three.
    mcp_token_days: int = 90
    mcp_calls_per_minute: int = 60
    # A token's owner is confirmed with Slack again (users.info) when Slack last described them longer
    # ago than this, so a deactivation Slack never announced (no `user_change`) ends the token within
    # it, not after DOCSBOT_BOT_LOOKUP_TTL_S; when Slack cannot be asked, the token is refused (503).
    mcp_owner_fresh_s: float = 30.0
    # Failed authentications at `/mcp` (no token, a wrong, revoked or expired one) a minute from one
    # client address, and from all of them together, before requests are refused (429) without
    # their token being looked up; per replica (agents/auth_failures.py).
    mcp_auth_failures_per_minute: int = 10
    mcp_auth_failures_per_minute_all: int = 100
    # The Host and Origin headers `/mcp` accepts (DNS-rebinding protection; `host:*` is any port):
    # add the name agents reach the bot by. No Origin header (an agent, not a browser) is accepted.
    mcp_allowed_hosts: list[str] = Field(default_factory=lambda: ["127.0.0.1:*", "localhost:*"])
    mcp_allowed_origins: list[str] = Field(default_factory=list)

    # -- Git docs sync (sync/) ---------------------------------------------------------------------
    # The docs repository: a URL (https://user:token@host/org/repo.git, git@host:org/repo.git) or a
    # local path. Unset: `docsbot sync` reconciles the local DOCSBOT_DOCS_DIR folder instead.
    repo: SecretStr | None = None
    # Several docs repositories at once: a TOML file with a [[source]] table each (foundation/
    # sources_file.py, docs/sync.md). Instead of DOCSBOT_REPO, which is the single unnamed source.
    sources: str = ""
    # Branch to follow; empty means the remote's default branch (its HEAD).
    branch: str = ""
    # Private working copy and lock file; default `<data_dir>/sync` (required when data_dir is a URI).
    # A replica (`docsbot serve`) with an index in a bucket keeps its mirror of the index in
    # `<work_dir>/index-mirror` (unset: a temporary folder, removed at exit).
    work_dir: str = ""
    # Scheduled syncs: every N minutes, or a 5-field cron expression (wins when set), with jitter.
    sync_interval_minutes: float = 5.0
    sync_cron: str = ""
    sync_jitter_s: int = 30
    # A failed fetch is retried this many times with exponential backoff before the sync fails.
    sync_fetch_retries: int = 3
    sync_retry_backoff_s: float = 2.0
    # One git command's limit; a fetch's attempts and backoff together (an http(s) remote that
    # sends nothing for 20 s ends an attempt).
    git_timeout_s: float = 300.0
    # Shared secret of the push webhook (GitHub X-Hub-Signature-256 or GitLab X-Gitlab-Token).
    webhook_secret: SecretStr | None = None
    # The folder watcher waits for this long without changes before reindexing a burst.
    watch_debounce_ms: int = 1600
    # Fault injection for crash tests: the sync process kills itself (SIGKILL) at this point,
    # "before-write" (working copy at the new head, index untouched) or "after-write" (chunks
    # written, indexed commit not yet recorded). Empty in production.
    sync_kill_at: Literal["", "before-write", "after-write"] = ""

    # -- Docs change proposals (proposals/, `docsbot propose`) ----------------------------------------
    # Where a proposal's pull request is opened: "github" or "gitlab"; empty: known from the repository's
    # host (github.com, gitlab.com), else the branch is pushed and no request opened. A self-hosted
    # forge names its kind and its API (`https://git.example.com/api/v4`, `https://ghe.example.com/api/v3`).
    forge: Literal["", "github", "gitlab"] = ""
    forge_api_url: str = ""
    # The repository on the forge ("owner/name", GitLab "group/sub/name"); empty: from the repository URL.
    forge_project: str = ""
    # The API token (a pull request, reviewers); unset: the token in the repository's URL.
    forge_token: SecretStr | None = None
    # The author of a proposal's commit, "Name <email>"; the proposer is its Co-authored-by.
    proposal_author: str = "docsbot <docsbot@users.noreply.invalid>"
    # How many docs changes one person may propose from Slack in any 24 hours (every replica together).
    proposals_per_day: int = 5

    # -- Running several processes (sync/lease.py, state/sync_requests.py, rag/store/) -------------
    # Seconds within which a reader sees a new index version: how often a replica checks the bucket
    # for one to copy into its mirror (at least 1 s), LanceDB's read_consistency_interval elsewhere.
    index_refresh_s: float = 10.0
    # The index-writer lease in the state store: it expires this long after its holder's last
    # renewal (a standby takes over then) and is renewed this often.
    sync_lease_ttl_s: float = 15.0
    sync_lease_renew_s: float = 5.0
    # How often a worker without LISTEN/NOTIFY (SQLite) looks for new sync requests.
    sync_request_poll_s: float = 2.0

    # -- Shared state (state/) ---------------------------------------------------------------------
    # SQLAlchemy URL of the state database (answers, feedback, dedupe, rate limits, sync requests,
    # leases): postgresql://user:password@host/db for a team. Unset: a SQLite file
    # `<data_dir>/state.db`, or `<work_dir>/state.db` when the data dir is a URI. Secret (password).
    database_url: SecretStr | None = None

    # -- Answer log and feedback (state/answers.py, eval/feedback_cli.py) --------------------------
    # Days answers (and the feedback on them) are kept in the state database; older ones are
    # deleted by the bot's hourly retention, except a 👎 nobody has reviewed yet (kept until it is
    # promoted or rejected). 0 keeps everything.
    answer_log_days: int = 90

    # -- Docs gaps and owners (state/gaps.py, insights/gaps.py, bot/digest.py) ------------------------------
    # When each docs owner gets their weekly DM of the questions the docs could not answer, the 👎
    # and their pages overdue for review: a 5-field cron expression in UTC (Slack's API has no
    # workspace time zone); empty: no digest. Name the askers in it (off: questions only).
    digest_cron: str = "0 9 * * MON"
    digest_name_askers: bool = False
    # A page is overdue for review this many days after its front matter's `last_reviewed`, else its
    # last commit, unless its `review_in` says otherwise; its citations then say how old it is.
    review_days: int = 365

    @field_validator("digest_cron", mode="after")
    @classmethod
    def _digest_cron(cls, value: str) -> str:
        if value.strip() and len(value.split()) != 5:
            raise ValueError(f"needs 5 fields (minute hour day month weekday) or nothing, got {value!r}")
        return value.strip()

    # -- Operating it: logs, metrics, restarts (foundation/observability/, bot/serve.py) --------------
    # Log lines as readable text (default) or one JSON object per line, at this level. Unset: INFO
    # for the long-running `serve` and `sync --watch`, WARNING for the one-shot commands and the
    # console, whose own output would drown in per-question lines.
    log_format: Literal["text", "json"] = "text"
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] | None = None
    # Put question and document text in log lines (off: only lengths, IDs and outcomes).
    log_questions: bool = False
    # Port of the sync worker's (`docsbot sync --watch`) /metrics; 0 turns it off. The bot serves
    # /metrics on its own $PORT.
    metrics_port: int = 9464
    # On SIGTERM, answers in flight get this long to finish before their placeholders are edited
    # to a restart note (keep it under the platform's kill window, usually 30 s).
    drain_s: float = 20.0

    @field_validator("log_level", mode="before")
    @classmethod
    def _log_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value
