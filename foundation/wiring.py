"""From the one `Settings` to the configuration each library takes: configuration flows down.

`rag`, `sync` and `state` never see `Settings`: each defines the small frozen objects it reads
(rag/config.py, sync/config.py, state/config.py), and they are built here. This is also where an
engine and the state store are opened from settings.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING

from pydantic import SecretStr

from foundation.errors import UserError
from foundation.links import links_of, site_of
from foundation.settings import Settings
from foundation.sources_file import Source, SourcesFile
from rag import (
    AnswerConfig, ChunkingConfig, DocsConfig, EmbeddingConfig, IndexConfig, LinkConfig, LLMConfig, RagConfig,
    RerankConfig, RetrievalConfig,
)
from state.config import GapsConfig, StateConfig
from sync.config import LeaseConfig, SourceConfig, SyncConfig

if TYPE_CHECKING:
    from rag import Engine, Generator
    from state.db import StateDB


def _secret(value: SecretStr | None) -> str | None:
    return value.get_secret_value() if value is not None else None


def llm_config(s: Settings) -> LLMConfig:
    return LLMConfig(
        base_url=s.openai_base_url, api_key=_secret(s.openai_api_key), chat_model=s.chat_model,
        attempt_timeout_s=s.llm_attempt_timeout_s, total_timeout_s=s.llm_total_timeout_s,
        max_retries=s.llm_max_retries, max_tokens=s.llm_max_tokens, stream=s.llm_stream,
        followup_rewrite_timeout_s=s.followup_rewrite_timeout_s, provider=s.llm_provider,
        context_tokens=s.llm_context_tokens,
    )


def retrieval_config(s: Settings) -> RetrievalConfig:
    return RetrievalConfig(
        top_k=s.top_k, candidates=s.candidates, min_similarity=s.min_similarity, rrf_k=s.rrf_k,
        list_weights=MappingProxyType(dict(s.list_weights)), mmr_lambda=s.mmr_lambda,
        fusion_coverage_power=s.fusion_coverage_power, doc_fusion=s.doc_fusion,
        max_chunks_per_doc=s.max_chunks_per_doc,
    )


def rag_config(s: Settings) -> RagConfig:
    return RagConfig(
        docs=DocsConfig(tuple(s.include), tuple(s.exclude), s.max_file_bytes, dict(s.path_levels), s.default_level,
                        s.docs_language, s.index_drafts),
        chunking=ChunkingConfig(s.chunk_size, s.chunk_overlap),
        links=LinkConfig(*links_of(s), s.repo_subdir, *site_of(s)),
        index=index_config(s),
        embedding=EmbeddingConfig(s.embedding_provider, s.embedding_model, s.embedding_dim, s.embedding_threads,
                                  s.embedding_batch, s.embedding_save_s),
        llm=llm_config(s),
        rerank=RerankConfig(s.rerank_url, s.rerank_model, _secret(s.rerank_api_key), s.rerank_timeout_s,
                            s.rerank_top_n),
        retrieval=retrieval_config(s),
        answer=AnswerConfig(s.no_access_margin, s.context_budget_chars, s.expand_top_doc, s.access_hint,
                            s.answerability_file, s.review_days),
    )


def index_config(s: Settings) -> IndexConfig:
    """Where the index is (DOCSBOT_INDEX_URL, else DOCSBOT_DATA_DIR) and how it is read."""
    return IndexConfig(s.data_dir, s.work_dir, s.index_refresh_s, s.ann_min_rows, _secret(s.index_url) or "")


def database_url(s: Settings) -> str:
    """DOCSBOT_DATABASE_URL, else a SQLite file beside a local index, else in the work dir."""
    if s.database_url is not None:
        return s.database_url.get_secret_value()
    if "://" not in s.data_dir:
        folder = Path(s.data_dir)
    elif s.work_dir:
        folder = Path(s.work_dir)
    else:
        raise UserError(
            "DOCSBOT_DATA_DIR is a URI, so the state database cannot live beside the index: "
            "set DOCSBOT_DATABASE_URL (postgresql://…) or DOCSBOT_WORK_DIR (for a local SQLite file)"
        )
    return f"sqlite:///{(folder / 'state.db').resolve()}"


def state_config(s: Settings) -> StateConfig:
    """The state store, importing the old LanceDB answer log beside the index the first time."""
    return StateConfig(database_url(s), legacy_index=s.data_dir)


def gaps_config(s: Settings) -> GapsConfig:
    return GapsConfig(s.digest_cron, s.digest_name_askers, s.review_days)


def lease_config(s: Settings) -> LeaseConfig:
    return LeaseConfig(state_config(s), s.sync_lease_ttl_s, s.sync_lease_renew_s)


def sync_config(s: Settings) -> SyncConfig:
    """The sync's configuration; with DOCSBOT_SOURCES, each source's too (read at each sync)."""
    return SyncConfig(
        rag=rag_config(s), lease=lease_config(s), repo=_secret(s.repo), branch=s.branch,
        docs_dir=s.docs_dir, work_dir=s.work_dir, git_timeout_s=s.git_timeout_s,
        fetch_retries=s.sync_fetch_retries, retry_backoff_s=s.sync_retry_backoff_s,
        interval_minutes=s.sync_interval_minutes, cron=s.sync_cron, jitter_s=s.sync_jitter_s,
        watch_debounce_ms=s.watch_debounce_ms, kill_at=s.sync_kill_at, request_poll_s=s.sync_request_poll_s,
        webhook_secret=_secret(s.webhook_secret), sources=SourceConfigs(s) if s.sources else None,
    )


class SourceConfigs:
    """The sources in force (foundation/sources_file.py), as the sync takes them: each its own
    sync configuration, its working copy in `<work dir>/sources/<name>`, the lease shared."""

    def __init__(self, s: Settings) -> None:
        self.settings = s
        self.file = SourcesFile(s.sources, s)  # SourcesFileError when the first read fails

    def __call__(self) -> tuple[SourceConfig, ...]:
        return tuple(
            SourceConfig(src.name, replace(sync_config(source_settings(self.settings, src)),
                                           lease=lease_config(self.settings)), src.was)
            for src in self.file.current()
        )


def source_settings(s: Settings, source: Source) -> Settings:
    """A source's settings as its sync reads them: its working copy in `<work dir>/sources/<name>`."""
    base = Path(s.work_dir) if s.work_dir else Path(s.data_dir) / "sync"
    return source.settings.model_copy(update={"work_dir": str(base / "sources" / source.name)})


def open_engine(s: Settings, generator: "Generator | None" = None, read_only: bool = False) -> "Engine":
    from rag import Engine

    return Engine.open(rag_config(s), generator, read_only)


async def open_state_db(s: Settings) -> "StateDB":
    from state.opening import open_state

    return await open_state(state_config(s))
