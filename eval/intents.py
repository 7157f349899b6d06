"""`python -m eval intents`: the meaning check of prompt injections (rag/intent.py, issue 51), measured.

- Recall on the paraphrases of tests/fixtures/injections/: `paraphrases.jsonl` (the threshold and
  the exemplars were chosen looking at these) and `heldout.jsonl` (scored, never tuned on), and
  the flags on `ordinary.jsonl` (the same requests made of a human reader: none should be).
- The cost on ordinary docs: every sentence the check would read in each corpus (docs-sync and,
  under --shared, each eval/*/docs folder, each Git bundle of eval/team-handbooks-dev*/ and
  corpora/, each folder of corpora/formats-dev/), read with the docs reader and chunked as they are
  indexed, each chunk as the check reads it (title, section, text): the number and rate flagged,
  and each flagged sentence with its page. Every sentence is embedded once: ~170k sentences take
  half an hour to an hour on two shared cores (--corpus picks some).
- The same at other bars (GRID: threshold and margin), from the same verdicts: what a lower bar
  would catch and what it would flag.
- The latency it adds to a question: the sample docs (docs-sync, indexed in a temporary folder)
  and their golden questions, each asked with the check off, with every sentence embedded anew
  (cold: no cache), with the cache a bot that just started has (filled by the questions before
  it), and again once all were asked (the cache holding their sentences); the p50 and p90 of the
  source selection step (`sources_ms`) and of the whole question.

`--json FILE` writes the figures and the flagged sentences as one JSON object.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from foundation.settings import Settings
from foundation.wiring import lease_config, open_engine, rag_config
from eval.golden import GoldenCase, load_golden
from eval.procedures import checkout
from rag import Intents, LocalMiniLM, chunk_document, make_embedder
from rag.intent import MARGIN, THRESHOLD, Verdict, sentences
from sync.folder import index_folder

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "injections"
BATCH = 2048  # sentences embedded per call: the progress line moves, memory stays flat


def corpora(shared: Path | None) -> dict[str, Path]:
    """Each corpus by name: docs-sync, then what ../shared holds (bundles cloned once, to /tmp)."""
    found = {"docs-sync": REPO / "docs-sync"}
    if shared is None:
        return found
    for docs in sorted(shared.glob("eval/*/docs")):
        found[docs.parent.name] = docs
    for bundle in sorted([*shared.glob("eval/team-handbooks-dev*/*.bundle"), *shared.glob("corpora/*/*.bundle")]):
        found[bundle.stem] = checkout(bundle)
    for folder in sorted(p for p in shared.glob("corpora/formats-dev/*") if p.is_dir()):
        found[f"formats-{folder.name}"] = folder
    return found


def read_sentences(root: Path, settings: Settings) -> dict[str, str]:
    """Each distinct sentence the check would read in the folder's chunks, with the first page it is on."""
    config = rag_config(settings)
    docs, _ = config.docs.read_folder(root)
    seen: dict[str, str] = {}
    for doc in docs:
        for chunk in chunk_document(doc, config.chunking.size, config.chunking.overlap):
            for sentence in sentences("\n".join((doc.title, chunk.section, chunk.text))):
                seen.setdefault(sentence, doc.path)
    return seen


# Other bars, scored from the same verdicts: what a lower or higher one would catch and flag.
GRID = [(t, m) for t in (0.58, 0.60, 0.62, 0.64, 0.66) for m in (0.05, 0.10, 0.15)]


def flags(verdicts: list[Verdict], threshold: float = THRESHOLD, margin: float = MARGIN) -> int:
    return sum(v.flagged(threshold, margin) for v in verdicts)


def corpus_report(name: str, root: Path, settings: Settings, check: Intents) -> tuple[dict[str, Any], list[Verdict]]:
    """The corpus's figures and flagged sentences, and every sentence's verdict (for GRID)."""
    found = read_sentences(root, settings)
    texts = list(found)
    verdicts: list[Verdict] = []
    for start in range(0, len(texts), BATCH):
        verdicts += check.verdicts(texts[start:start + BATCH])
        print(f"  {name}: {len(verdicts)}/{len(texts)} sentences", file=sys.stderr, flush=True)
    flagged = [{"sentence": text, "page": found[text], "intent": v.intent, "nearest": round(v.nearest, 3),
                "ordinary": round(v.ordinary, 3)} for text, v in zip(texts, verdicts) if v.flagged()]
    return {"corpus": name, "sentences": len(texts), "flagged": len(flagged),
            "rate": len(flagged) / len(texts) if texts else 0.0, "flagged_sentences": flagged}, verdicts


def paraphrase_report(check: Intents) -> tuple[dict[str, Any], dict[str, list[list[Verdict]]]]:
    """Per fixture file: how many texts are flagged, by intent, and those judged wrongly (an
    injection missed, an ordinary instruction flagged); and each text's sentence verdicts (for GRID)."""
    report: dict[str, Any] = {}
    judged: dict[str, list[list[Verdict]]] = {}
    for path in sorted(FIXTURES.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        judged[path.stem] = [check.verdicts(sentences(row["text"])) for row in rows]
        hits = [flags(verdicts) > 0 for verdicts in judged[path.stem]]
        by_intent: Counter[str] = Counter()
        for row, hit in zip(rows, hits):
            by_intent[f"{row.get('intent', 'ordinary')} {'flagged' if hit else 'not flagged'}"] += 1
        report[path.stem] = {"texts": len(rows), "flagged": sum(hits), "by_intent": dict(sorted(by_intent.items())),
                             "wrong": [row["text"] for row, hit in zip(rows, hits) if hit != ("intent" in row)]}
    return report, judged


def curve(texts: dict[str, list[list[Verdict]]], sentences_of: list[Verdict]) -> list[dict[str, Any]]:
    """At each bar of GRID: the texts of each fixture flagged, and the corpus sentences flagged."""
    return [{"threshold": t, "margin": m, "corpus_flagged": flags(sentences_of, t, m),
             **{name: sum(flags(v, t, m) > 0 for v in judged) for name, judged in texts.items()}} for t, m in GRID]


async def latency_report() -> dict[str, Any]:
    """The sources step and the whole question on the sample docs, per pass: the check off, cold
    (no cache: every sentence embedded), served (the cache filled by the questions before, as a
    bot starting up has it), then each question again (the cache holding every sentence asked)."""
    with tempfile.TemporaryDirectory(prefix="eval-intents-") as scratch:
        settings = Settings(_env_file=None, data_dir=scratch)
        engine = open_engine(settings)
        index_folder(engine, lease_config(settings), REPO / "docs-sync")
        cold, served = Intents(engine.embedder, cache_sentences=0), Intents(engine.embedder)
        for fresh in (cold, served):
            fresh.injected(["The exemplars are embedded before anything is timed."])
        cases = load_golden([REPO / "eval" / "golden.jsonl"])
        timings: dict[str, list[tuple[float, float]]] = {"off": [], "cold": [], "served": [], "again": []}
        read: list[int] = []

        async def timed(check: Intents | None, case: GoldenCase, into: list[tuple[float, float]]) -> None:
            engine.intents = check
            started = time.perf_counter()
            answer = await engine.ask(case.question, case.level, case.history)
            if "sources_ms" in answer.diagnostics.timings_ms:  # the question got as far as its sources
                into.append((answer.diagnostics.timings_ms["sources_ms"], (time.perf_counter() - started) * 1000))

        for case in cases:  # the passes in turn, question by question: all see the same machine load
            before = cold.embedded
            for check, name in ((None, "off"), (cold, "cold"), (served, "served")):
                await timed(check, case, timings[name])
            read.append(cold.embedded - before)
        for case in cases:
            await timed(None, case, timings["off"])
            await timed(served, case, timings["again"])
        await engine.aclose()
    report: dict[str, Any] = {"questions": len(cases), "sentences_read_p50": statistics.median(read)}
    for name, pairs in timings.items():
        steps, totals = [step for step, _ in pairs], [total for _, total in pairs]
        report[name] = {"sources_ms_p50": round(statistics.median(steps), 1), "sources_ms_p90": round(_p90(steps), 1),
                        "total_ms_p50": round(statistics.median(totals), 1), "total_ms_p90": round(_p90(totals), 1)}
    for name in ("cold", "served", "again"):
        report[f"added_ms_p50_{name}"] = round(report[name]["sources_ms_p50"] - report["off"]["sources_ms_p50"], 1)
    return report


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m eval intents", description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared",
                        help="the shared eval folder (default: ../shared); docs-sync alone when it is missing")
    parser.add_argument("--corpus", action="append", help="only these corpora (repeatable)")
    parser.add_argument("--skip", action="append", default=[], choices=["paraphrases", "corpora", "latency"])
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args(argv[1:])
    settings = Settings(_env_file=None, default_level="public")
    embedder = make_embedder(rag_config(settings))
    assert isinstance(embedder, LocalMiniLM)  # the model the threshold was chosen on
    check = Intents(embedder, cache_sentences=0)
    report: dict[str, Any] = {}
    texts: dict[str, list[list[Verdict]]] = {}
    if "paraphrases" not in args.skip:
        report["paraphrases"], texts = paraphrase_report(check)
        for name, figures in report["paraphrases"].items():
            print(f"{name}: {figures['flagged']} of {figures['texts']} flagged  {figures['by_intent']}")
    if "corpora" not in args.skip:
        shared = args.shared if args.shared.is_dir() else None
        chosen = {n: p for n, p in corpora(shared).items() if not args.corpus or n in args.corpus}
        judged = [corpus_report(n, p, settings, check) for n, p in chosen.items()]
        report["corpora"] = [figures for figures, _ in judged]
        for c in report["corpora"]:
            print(f"{c['corpus']:<28} {c['flagged']:>3} of {c['sentences']:>6} sentences flagged")
            for f in c["flagged_sentences"]:
                print(f"    {f['nearest']:.2f} / {f['ordinary']:.2f} {f['intent']}: {f['page']}: {f['sentence'][:120]}")
        total = sum(c["sentences"] for c in report["corpora"])
        flagged = sum(c["flagged"] for c in report["corpora"])
        report["corpora_total"] = {"sentences": total, "flagged": flagged, "rate": flagged / total if total else 0.0}
        print(f"all corpora: {flagged} of {total} sentences flagged ({report['corpora_total']['rate']:.5%})")
        report["curve"] = curve(texts, [v for _, verdicts in judged for v in verdicts])
        print("other bars (threshold / margin: texts flagged per fixture, corpus sentences flagged):")
        for point in report["curve"]:
            print("  " + "  ".join(f"{k} {v}" for k, v in point.items()))
    if "latency" not in args.skip:
        report["latency"] = asyncio.run(latency_report())
        print(json.dumps(report["latency"], indent=1))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0
