"""`python -m eval COMMAND ...`: each command lives in its own module with a `main(argv)`."""
from __future__ import annotations

import importlib
import sys

COMMANDS = {
    "run": ("eval.runner", "golden-set evaluation (retrieval, abstention, citations, latency)"),
    "sweep": ("eval.sweep", "try a grid of retrieval settings on several sets; rank by their macro average"),
    "calibrate": ("eval.calibrate", "fit the answerability gate on several sets; write its parameter file"),
    "shared-index": ("eval.shared_index", "dev sets asked of one index holding their docs as sources, vs their own"),
    "bench": ("eval.bench", "retrieval latency and recall against numpy brute force; ingest rate"),
    "bench-sync": ("eval.bench_sync", "incremental sync against a full rebuild"),
    "bench-sources": ("eval.bench_sources", "N docs repositories as sources against one repository of the same files"),
    "bench-acks": ("eval.bench_acks", "how fast a busy `docsbot serve` acknowledges Slack (p99 < 300 ms)"),
    "bench-ratelimits": ("eval.bench_ratelimits", "a 200-question burst under Slack's rate limits, vs unlimited"),
    "bench-audience": ("eval.bench_audience", "Slack calls and latency per answer of confirming audiences, vs before"),
    "bench-startup": ("eval.bench_startup", "`docsbot --help`, `status`, `ask` and a no-op `sync` start times"),
    "bench-memory": ("eval.bench_memory", "peak RSS of a first sync: ~500 chunks against ~10k (and a repository)"),
    "bench-mcp": ("eval.bench_mcp", "search_docs over /mcp (token, SDK client) against a direct search (p50 < 60 ms)"),
    "candidates": ("eval.feedback_cli", "thumbs-down answers grouped by likely cause"),
    "promote": ("eval.feedback_cli", "turn a candidate into a golden-set case"),
    "reject": ("eval.feedback_cli", "dismiss a candidate"),
    "llm-server": ("eval.llm_server", "build (once) and install the llama.cpp server and model `make eval-llm` uses"),
    "intents": ("eval.intents", "injections found by meaning: paraphrase recall, flags per corpus, added latency"),
    "fuzz": ("eval.fuzz", "property-based fuzzing of documents, access files, mrkdwn, Slack endpoint, webhook"),
}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] not in COMMANDS:
        print("usage: python -m eval COMMAND [options]\n\ncommands:")
        for name, (_, help_text) in COMMANDS.items():
            print(f"  {name:<12} {help_text}")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    module = importlib.import_module(COMMANDS[argv[0]][0])
    return module.main(argv)


if __name__ == "__main__":
    sys.exit(main())
