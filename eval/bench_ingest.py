"""Ingest throughput for `python -m eval bench`: how fast documents become searchable chunks.

The real index path (chunk, embed, save to the vector cache, write, maintain) runs twice on the
same documents into two fresh stores: with one embedding thread (the old default) and with the
default for bulk work (one per core). Embedding alone also runs in one worker process per core.
The machine is shared and noisy, so the three run interleaved, a round of documents at a time,
in a rotating order, and the figures are ratios from the same run. Vectors must match: the
cosine of every chunk's vector against the 1-thread one is reported (≥ 0.9999 expected).
"""
from __future__ import annotations

import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from foundation.settings import Settings
from foundation.wiring import rag_config
from eval import embed_worker
from eval.repos import opened
from rag import Document, IndexStats, LocalMiniLM, apply_documents, bulk_threads, chunk_document, length_batches

CONFIGS = ("1thread", "threads", "processes")


def embed_in_processes(pool: ProcessPoolExecutor, texts: list[str], batch: int) -> np.ndarray:
    """Length-bucketed batches spread over the worker processes, as the threads get them."""
    batches = length_batches(texts, batch)
    out = np.zeros((len(texts), LocalMiniLM.dim), np.float32)
    for idx, vectors in zip(batches, pool.map(embed_worker.embed, [[texts[i] for i in b] for b in batches])):
        out[idx] = vectors
    return out


def pick_documents(docs: list[Document], settings: Settings, chunks: int) -> list[Document]:
    picked, total = [], 0
    for doc in docs:
        if total >= chunks:
            break
        picked.append(doc)
        total += len(chunk_document(doc, settings.chunk_size, settings.chunk_overlap))
    return picked


def _texts(docs: list[Document], settings: Settings) -> dict[str, str]:
    """text hash -> embedded text of the documents' chunks (each text once, as the indexer does)."""
    return {
        c.text_hash: c.embed_text
        for doc in docs
        for c in chunk_document(doc, settings.chunk_size, settings.chunk_overlap)
    }


def _add(total: dict[str, float], steps: dict[str, float]) -> None:
    for name, seconds in steps.items():
        total[name] = total.get(name, 0.0) + seconds


def _min_cosine(reference: dict[str, np.ndarray], other: dict[str, np.ndarray]) -> float:
    keys = sorted(reference)
    if not keys or set(keys) != set(other):
        return 0.0
    a, b = np.stack([reference[k] for k in keys]), np.stack([other[k] for k in keys])
    return round(float((a * b).sum(1).min()), 6)


def measure_ingest(workdir: Path, docs: list[Document], settings: Settings, chunks: int,
                   rounds: int = 4) -> dict[str, Any]:
    """Index ~`chunks` chunks of `docs` per configuration. The multi-thread store is left at
    `workdir / "ingest"` (the retrieval benchmark reads its rows)."""
    picked = pick_documents(docs, settings, chunks)
    groups = [g for g in (picked[r::rounds] for r in range(rounds)) if g]
    threads = bulk_threads(settings.embedding_threads, serving=False)
    models = {"1thread": LocalMiniLM(threads=1, batch=settings.embedding_batch),
              "threads": LocalMiniLM(threads=threads, batch=settings.embedding_batch)}
    stores = {"1thread": opened(workdir / "ingest-1thread"), "threads": opened(workdir / "ingest")}
    wall = dict.fromkeys(CONFIGS, 0.0)
    steps: dict[str, dict[str, float]] = {"1thread": {}, "threads": {}}
    process_vectors: dict[str, np.ndarray] = {}
    context = multiprocessing.get_context("spawn")  # a fork would copy onnxruntime's threads' state
    with ProcessPoolExecutor(threads, mp_context=context, initializer=embed_worker.load,
                             initargs=(settings.embedding_batch,)) as pool:
        list(pool.map(embed_worker.embed, [["warm up"]] * threads))  # models loaded before timing
        for number, group in enumerate(groups):
            order = CONFIGS[number % 3:] + CONFIGS[:number % 3]
            for config in order:
                started = time.perf_counter()
                if config == "processes":
                    texts = _texts(group, settings)
                    vectors = embed_in_processes(pool, list(texts.values()), settings.embedding_batch)
                    process_vectors.update(zip(texts, vectors))
                else:
                    stats: IndexStats = apply_documents(stores[config], models[config], rag_config(settings), group, {})
                    _add(steps[config], stats.steps.seconds)
                wall[config] += time.perf_counter() - started
    total = stores["threads"].counts()["chunks"]
    embedded = len(process_vectors)
    reference = stores["1thread"].cached_vectors(list(process_vectors))
    return {
        "chunks": total,
        "chunks_per_s": round(total / wall["threads"], 1),
        "chunks_per_s_1thread": round(total / wall["1thread"], 1),
        "ratio": round(wall["1thread"] / wall["threads"], 2),
        "threads": threads,
        "embed_per_s": {
            "1thread": _rate(embedded, steps["1thread"]),
            "threads": _rate(embedded, steps["threads"]),
            "processes": round(embedded / wall["processes"], 1),
        },
        "min_cosine_vs_1thread": {
            "threads": _min_cosine(reference, stores["threads"].cached_vectors(list(process_vectors))),
            "processes": _min_cosine(reference, process_vectors),
        },
        "seconds": {config: _rounded(steps[config] | _stages(models[config])) for config in steps},
        "rounds": len(groups),
        "load_average": [round(x, 1) for x in os.getloadavg()],
    }


def query_latency(texts: list[str], queries: list[str], batch: int) -> dict[str, float]:
    """p50 / p95 ms of embedding one question (as the bot does) with nothing else running, and
    while a sync in the same process embeds `texts` with the bot's bulk thread count (all cores
    but one) or with every core. Rounds interleave the three so they share the machine's load."""
    query_model = LocalMiniLM(threads=1, batch=batch)
    bulk = {"serving": LocalMiniLM(threads=bulk_threads(0, serving=True), batch=batch),
            "all_cores": LocalMiniLM(threads=bulk_threads(0, serving=False), batch=batch)}
    samples: dict[str, list[float]] = {"idle": [], "serving": [], "all_cores": []}
    for number in range(0, len(queries), 5):
        asked = queries[number:number + 5]
        for phase in samples:
            with ThreadPoolExecutor(1) as background:
                running = background.submit(bulk[phase].embed, texts) if phase in bulk else None
                time.sleep(0.2 if running else 0)  # let the bulk batches start
                for question in asked:
                    started = time.perf_counter()
                    query_model.embed([question])
                    samples[phase].append(time.perf_counter() - started)
                if running:
                    running.result()
    return {f"{phase}_{q}_ms": round(float(np.percentile(values, q)) * 1000, 1)
            for phase, values in samples.items() for q in (50, 95)}


def _rate(texts: int, steps: dict[str, float]) -> float:
    """Texts per second of embedding alone (the embed step less its saves to the cache)."""
    seconds = steps.get("embed", 0.0) - steps.get("save", 0.0)
    return round(texts / seconds, 1) if seconds > 0 else 0.0


def _stages(model: LocalMiniLM) -> dict[str, float]:
    """Thread-seconds inside the embedder (they add up to more than wall time with threads)."""
    return {f"{name}_thread_s": seconds for name, seconds in model.stages.seconds.items()}


def _rounded(values: dict[str, float]) -> dict[str, float]:
    return {name: round(value, 2) for name, value in values.items()}


def report(ing: dict[str, Any]) -> list[str]:
    rates, cosine = ing["embed_per_s"], ing["min_cosine_vs_1thread"]
    lines = [
        f"ingest ({ing['chunks']} chunks in {ing['rounds']} interleaved rounds, load average "
        f"{', '.join(map(str, ing['load_average']))}): {ing['chunks_per_s']} chunks/s with {ing['threads']} "
        f"threads vs {ing['chunks_per_s_1thread']} with 1 = {ing['ratio']}x (chunk, embed, save, write, maintain)",
        f"  embedding alone: 1 thread {rates['1thread']}/s, {ing['threads']} threads {rates['threads']}/s, "
        f"{ing['threads']} processes {rates['processes']}/s; min cosine vs 1 thread: threads "
        f"{cosine['threads']}, processes {cosine['processes']}",
    ]
    for config, seconds in ing["seconds"].items():
        lines.append(f"  seconds, {config}: " + ", ".join(f"{k} {v}" for k, v in seconds.items()))
    if "query_embed" in ing:
        q = ing["query_embed"]
        lines.append(
            f"  query embedding p50/p95: idle {q['idle_50_ms']}/{q['idle_95_ms']} ms; during a sync in the same "
            f"process with the bot's bulk threads {q['serving_50_ms']}/{q['serving_95_ms']} ms, with every core "
            f"{q['all_cores_50_ms']}/{q['all_cores_95_ms']} ms"
        )
    return lines
