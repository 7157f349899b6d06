"""rag: documents → chunks → embeddings → LanceDB → hybrid retrieval → prompt → answer → check.

The public face: every other package imports rag's names from here (`from rag import Engine`),
never from its modules; what is not in `__all__` is rag's own business. The names load on first
use (PEP 562), so `import rag` costs nothing: lancedb, pyarrow and the embedding model load only
when something that needs them is touched (`docsbot --help` must start fast).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> the module that defines it
_EXPORTS: dict[str, str] = {
    # answering
    **dict.fromkeys(("Engine", "History"), "rag.engine"),
    **dict.fromkeys(("ABSTAIN_MESSAGES", "NOT_SURE_LEAD", "Answer", "Citation", "Diagnostics"), "rag.answer"),
    "Level": "rag.levels",
    **dict.fromkeys(("SCOPE_MODES", "Scope"), "rag.scope"),
    "ExtractiveAnswerer": "rag.extractive",
    **dict.fromkeys(("Generator", "LLMChat", "ProviderError", "TextSink", "make_generator"), "rag.generation"),
    **dict.fromkeys(("Step", "StepSink", "StepStatus"), "rag.answer_steps"),
    **dict.fromkeys(("LinkedPage", "PageFacts", "linked_page", "page_facts", "site_pages_of"), "rag.page_links"),
    # chat providers (DOCSBOT_LLM_PROVIDER)
    **dict.fromkeys(("make_provider", "provider_names", "register_provider"), "rag.providers"),
    **dict.fromkeys(("ChatProvider", "Description", "Failure", "MalformedReply", "ProbeFinding"),
                    "rag.providers.protocol"),
    **dict.fromkeys(("PROMPT_VERSION", "looks_injected"), "rag.prompt"),
    "Intents": "rag.intent",
    "fences_balanced": "rag.spans",
    # configuration
    **dict.fromkeys(("AnswerConfig", "ChunkingConfig", "DocsConfig", "EmbeddingConfig", "IndexConfig", "LLMConfig",
                     "LinkConfig", "RagConfig", "RerankConfig", "RetrievalConfig"), "rag.config"),
    **dict.fromkeys(("LLM_ERROR_KINDS", "RagEvents", "install_events"), "rag.events"),
    # documents and indexing
    **dict.fromkeys(("AccessRules", "Document", "DocumentError", "inside", "load_folder", "parse_document",
                     "read_document", "shorten"), "rag.documents"),
    **dict.fromkeys(("HIDDEN", "NOT_UTF8_NAME", "check_pattern", "in_scope", "matches", "not_utf8", "shown_path",
                     "too_long"), "rag.paths"),
    **dict.fromkeys(("chunk_document", "sections"), "rag.chunking"),
    **dict.fromkeys(("Review", "review_of"), "rag.freshness"),
    **dict.fromkeys(("LeftOut", "Unindexed", "left_out_pages", "unindexed_files"), "rag.unindexed"),
    # document formats: which suffixes are read, and by which parser
    **dict.fromkeys(("default_include", "format_for", "suffixes"), "rag.formats"),
    **dict.fromkeys(("CodeOwners", "Ownership", "find_codeowners", "front_matter_of", "index_ownership",
                     "parse_codeowners", "split_owners"), "rag.owners"),
    **dict.fromkeys(("IndexStats", "Provenance", "apply_documents", "chunking_signature"), "rag.indexer"),
    "rebuild_index": "rag.rebuild",
    **dict.fromkeys(("hidden_progress", "recording_to"), "rag.progress"),
    # embeddings
    **dict.fromkeys(("Embedder", "EmbeddingError", "LocalMiniLM", "bulk_threads", "length_batches", "make_embedder"),
                    "rag.embeddings"),
    "bound_allocator": "rag.native_memory",
    # the index
    **dict.fromkeys(("Hit", "Index", "IvfTuned", "StoreError", "WriteRefused", "open_index", "read_tables",
                     "vector_array"), "rag.store"),
    # what `docsbot status` shows of the index, read without LanceDB
    **dict.fromkeys(("IndexSummary", "read_summary"), "rag.index_summary"),
    # retrieval (the eval's sweep replays it over cached searches) and its ranked lists (light: the
    # settings read their names and default weights)
    **dict.fromkeys(("HYBRID", "Candidate", "Found", "Mode", "Retrieval", "rank", "search_lists"), "rag.retrieval"),
    **dict.fromkeys(("SIGNALS", "Signal", "default_weights"), "rag.signals"),
}
_RENAMED = {"install_events": "install", "hidden_progress": "hidden", "register_provider": "register"}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'rag' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), _RENAMED.get(name, name))
    globals()[name] = value  # the next lookup does not come here
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:
    from rag.answer import ABSTAIN_MESSAGES, NOT_SURE_LEAD, Answer, Citation, Diagnostics
    from rag.chunking import chunk_document, sections
    from rag.config import (
        AnswerConfig, ChunkingConfig, DocsConfig, EmbeddingConfig, IndexConfig, LinkConfig, LLMConfig, RagConfig,
        RerankConfig, RetrievalConfig,
    )
    from rag.documents import (
        AccessRules, Document, DocumentError, inside, load_folder, parse_document, read_document, shorten,
    )
    from rag.paths import HIDDEN, NOT_UTF8_NAME, check_pattern, in_scope, matches, not_utf8, shown_path, too_long
    from rag.formats import default_include, format_for, suffixes
    from rag.freshness import Review, review_of
    from rag.embeddings import Embedder, EmbeddingError, LocalMiniLM, bulk_threads, length_batches, make_embedder
    from rag.native_memory import bound_allocator
    from rag.engine import Engine, History
    from rag.events import LLM_ERROR_KINDS, RagEvents
    from rag.events import install as install_events
    from rag.extractive import ExtractiveAnswerer
    from rag.generation import Generator, LLMChat, ProviderError, TextSink, make_generator
    from rag.answer_steps import Step, StepSink, StepStatus
    from rag.page_links import LinkedPage, PageFacts, linked_page, page_facts, site_pages_of
    from rag.indexer import IndexStats, Provenance, apply_documents, chunking_signature
    from rag.levels import Level
    from rag.owners import (
        CodeOwners, Ownership, find_codeowners, front_matter_of, index_ownership, parse_codeowners, split_owners,
    )
    from rag.providers import make_provider, provider_names
    from rag.providers import register as register_provider
    from rag.providers.protocol import ChatProvider, Description, Failure, MalformedReply, ProbeFinding
    from rag.progress import hidden as hidden_progress, recording_to
    from rag.prompt import PROMPT_VERSION, looks_injected
    from rag.intent import Intents
    from rag.rebuild import rebuild_index
    from rag.spans import fences_balanced
    from rag.index_summary import IndexSummary, read_summary
    from rag.unindexed import LeftOut, Unindexed, left_out_pages, unindexed_files
    from rag.scope import SCOPE_MODES, Scope
    from rag.retrieval import HYBRID, Candidate, Found, Mode, Retrieval, rank, search_lists
    from rag.signals import SIGNALS, Signal, default_weights
    from rag.store import Hit, Index, IvfTuned, StoreError, WriteRefused, open_index, read_tables, vector_array
