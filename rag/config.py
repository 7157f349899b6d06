"""What `rag` is told: small frozen configuration objects, one per concern.

`rag` reads no environment and knows no application settings: the application builds these
from its own settings (foundation/wiring.py) and passes them in. Each object holds only what its
part of the pipeline uses, so an engine never sees a Slack token or a database URL. Secrets are
plain strings left out of the repr.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Mapping

from rag.documents import AccessRules, Document, load_folder
from rag.levels import Level


@dataclass(frozen=True)
class DocsConfig:
    """Which files of a folder are documents, and the level of one without `access`."""

    include: tuple[str, ...]
    exclude: tuple[str, ...]
    max_file_bytes: int
    # Path rules, first match wins ({"public/**": Level.public}); else `default_level`.
    path_levels: dict[str, Level]
    default_level: Level
    # The language documents without a language marker are written in (rag/formats/language.py),
    # e.g. "en"; empty: unnamed, and the docs' default language is the most common one indexed.
    language: str = ""
    # Index pages whose front matter says `status: draft` (off: they are skipped with a reason).
    index_drafts: bool = False

    def access_rules(self) -> AccessRules:
        return AccessRules(dict(self.path_levels), self.default_level)

    def read_folder(self, root: Path) -> tuple[list[Document], list[tuple[str, str]]]:
        """The documents under root these settings index, and the (path, reason) of each skipped."""
        return load_folder(root, self.include, self.exclude, self.access_rules(), self.max_file_bytes,
                           self.index_drafts)


@dataclass(frozen=True)
class ChunkingConfig:
    size: int
    overlap: int


@dataclass(frozen=True)
class LinkConfig:
    """Citation links: `pattern` has {repo_web} {commit} {path} {anchor}; empty `repo_web`: none.

    With a `site_url` each chunk also gets its page on the published docs site (rag/site.py):
    `site_layout` names the generator, or `auto` to recognise it at index time from `site_root`,
    the docs folder as the indexer reads it (its configuration files and its routing front
    matter are read there); empty `site_url`: no page links."""

    repo_web: str
    pattern: str
    repo_subdir: str
    site_url: str = ""
    site_layout: str = "auto"
    site_root: str = ""


@dataclass(frozen=True)
class IndexConfig:
    """Where the index lives and how it is read and tuned: in `url` when set (a database, e.g.
    postgresql://…; it may hold a password), else in `data_dir` (a folder or a LanceDB URI)."""

    data_dir: str
    # A replica's mirror of an index in a bucket goes to `<work_dir>/index-mirror` (empty: a
    # temporary folder, removed at exit).
    work_dir: str
    # Seconds within which a reader sees another process's writes; None: never looks (one process).
    refresh_s: float | None
    ann_min_rows: int
    url: str = field(default="", repr=False)

    @property
    def location(self) -> str:
        """What rag.store.open_index opens: the URL, else the data dir."""
        return self.url or self.data_dir


@dataclass(frozen=True)
class LLMConfig:
    """The chat model's endpoint (answers, follow-up rewrites) through the provider named
    `provider` (rag/providers), and an OpenAI-compatible endpoint's embeddings."""

    base_url: str | None
    api_key: str | None = field(repr=False)
    chat_model: str
    attempt_timeout_s: float
    total_timeout_s: float
    max_retries: int
    max_tokens: int
    stream: bool
    followup_rewrite_timeout_s: float
    provider: str = "openai"
    context_tokens: int = 0  # the model's window; 0: the endpoint's word for it (rag/fitting.py)

    @property
    def enabled(self) -> bool:
        """The endpoint is used when a base URL or key is configured."""
        return bool(self.base_url or self.api_key)


@dataclass(frozen=True)
class EmbeddingConfig:
    provider: Literal["local", "openai"]
    model: str
    dim: int
    threads: int  # bulk embedding; 0: automatic (see rag.embeddings.bulk_threads)
    batch: int
    save_s: float  # seconds between saves to the vector cache while embedding (rag/indexer.py)


@dataclass(frozen=True)
class RerankConfig:
    """A `/rerank` endpoint; an empty `url` means no reranker."""

    url: str
    model: str
    api_key: str | None = field(repr=False)
    timeout_s: float
    top_n: int


@dataclass(frozen=True)
class RetrievalConfig:
    top_k: int
    candidates: int
    min_similarity: float
    rrf_k: int
    # Each ranked list's fusion weight by its name (rag/signals.py; a list not named: its default),
    # read-only (a MappingProxyType).
    list_weights: Mapping[str, float]
    mmr_lambda: float
    fusion_coverage_power: float
    doc_fusion: float
    max_chunks_per_doc: int


@dataclass(frozen=True)
class AnswerConfig:
    no_access_margin: float
    context_budget_chars: int
    expand_top_doc: bool
    access_hint: bool
    answerability_file: str  # empty: the parameter file in the package
    # A cited page is flagged "last reviewed … ago" this many days after its last review (else its
    # last commit) unless its front matter's `review_in` says otherwise (rag/freshness.py).
    review_days: int = 365


@dataclass(frozen=True)
class RagConfig:
    """Everything an Engine, the indexer and the embedder factory are configured with."""

    docs: DocsConfig
    chunking: ChunkingConfig
    links: LinkConfig
    index: IndexConfig
    embedding: EmbeddingConfig
    llm: LLMConfig
    rerank: RerankConfig
    retrieval: RetrievalConfig
    answer: AnswerConfig
