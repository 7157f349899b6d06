"""Evaluation sets: which docs, which golden files, which index, at which default level.

`python -m eval run|sweep|calibrate` take either `--docs DIR --golden FILE` pairs (repeatable, the
n-th `--golden` goes with the n-th `--docs`) or a suite file, JSON:
  {"sets": [{"name", "docs", "golden": [files], "default_level": "public", "data_dir": "...",
             "bundle": "a Git bundle, cloned once; docs is then a folder of its checkout",
             "include": ["globs of the files indexed, replacing DOCSBOT_INCLUDE for this set"],
             "tune": false, "facts": "an overlay {row id: [regex]} (eval/facts.py)",
             "thresholds": "the set's bars, for golden files that are not ours (else the file beside them)"}]}
with paths relative to the suite file. `include` lets a set of .rst, .mdx or .adoc pages be
indexed whatever the default globs are (an index is reused while its docs folder, chunking
version, which parser changes bump, and include globs are the same; sync/folder.py).
`"tune": false` keeps a set out of `eval sweep` and `eval calibrate` (procedure sets: scored by
their steps, every question answerable, nothing to say about retrieval or abstention defaults
the other sets don't); `eval run` scores every set. A set's index lives in `data_dir`, by default
`$DOCSBOT_DATA_DIR` for a single set and `$DOCSBOT_DATA_DIR/eval/<name>` for several, so each
corpus is indexed once and reused by later runs (the vector cache makes a rebuild with other
chunking cheap).
"""
from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, TypeVar

from foundation.errors import UserError
from foundation.settings import Settings
from foundation.wiring import lease_config, rag_config
from eval.golden import GoldenCase, GoldenError, default_golden_files
from eval.procedures import checkout
from rag import Embedder, Engine, Level, answerability, check_pattern, make_generator, open_index
from sync.folder import ensure_index

EVAL_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class EvalSet:
    name: str
    docs: Path | None  # None: $DOCSBOT_DOCS_DIR
    golden: tuple[Path, ...]
    default_level: Level | None = None  # for pages without front matter
    data_dir: str | None = None
    include: tuple[str, ...] | None = None  # None: the settings' include globs
    tune: bool = True  # False: `eval run` only, left out of sweep and calibrate
    facts: Path | None = None  # an overlay of `facts` by row id, for golden files that are not ours
    thresholds: Path | None = None  # the bars, for golden files that are not ours (eval/golden.thresholds_path)

    def settings(self, base: Settings, several: bool) -> Settings:
        update: dict[str, Any] = {}
        if self.data_dir:
            update["data_dir"] = self.data_dir
        elif several:
            update["data_dir"] = f"{base.data_dir.rstrip('/')}/eval/{self.name}"
        if self.default_level is not None:
            update["default_level"] = self.default_level
        if self.include is not None:
            update["include"] = list(self.include)
        return base.model_copy(update=update)


def from_pairs(docs: list[str], golden: list[Path]) -> list[EvalSet]:
    """Sets from repeated --docs/--golden options (no --golden: the default golden files)."""
    if len(docs) > 1 and len(golden) != len(docs):
        raise UserError(f"{len(docs)} --docs folders need as many --golden files (got {len(golden)})")
    if len(docs) <= 1:
        root = Path(docs[0]) if docs else None
        return [EvalSet(root.name if root else "default", root, tuple(golden or default_golden_files()))]
    return [EvalSet(_name(Path(d), g), Path(d), (g,)) for d, g in zip(docs, golden)]


def _name(docs: Path, golden: Path) -> str:
    """A readable set name: the golden file's folder unless it is eval/ itself, else the docs'."""
    parent = golden.resolve().parent
    return docs.resolve().name if parent == EVAL_DIR else parent.name


def load_suite(path: Path) -> list[EvalSet]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GoldenError(f"cannot read suite file {path}: {exc}") from None
    entries = raw.get("sets") if isinstance(raw, dict) else None
    if not isinstance(entries, list) or not entries:
        raise GoldenError(f"{path}: expected {{\"sets\": [{{\"name\", \"docs\", \"golden\": [...]}}]}}")
    here = path.resolve().parent
    sets = []
    for number, entry in enumerate(entries, 1):
        try:
            golden = entry["golden"] if isinstance(entry["golden"], list) else [entry["golden"]]
            level = entry.get("default_level")
            bundle = entry.get("bundle")  # a Git bundle: "docs" is a folder of its checkout
            include = entry.get("include")
            if include is not None and (not isinstance(include, list) or not include):
                raise TypeError("'include' must be a non-empty list of globs")
            tune = entry.get("tune", True)
            if not isinstance(tune, bool):
                raise TypeError("'tune' must be true or false")
            sets.append(EvalSet(
                str(entry["name"]),
                (checkout(here / bundle) if bundle else here) / entry["docs"],
                tuple(here / g for g in golden),
                Level.parse(level) if level else None,
                entry.get("data_dir"),
                tuple(check_pattern(str(g)) for g in include) if include is not None else None,
                tune,
                here / entry["facts"] if "facts" in entry else None,
                here / entry["thresholds"] if "thresholds" in entry else None,
            ))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise GoldenError(f"{path}: set {number}: {exc!r} (needs name, docs, golden)") from None
    return sets


def choose(docs: list[str] | None, golden: list[Path] | None, suite: Path | None,
           only: list[str] | None = None) -> list[EvalSet]:
    if suite is not None:
        if docs or golden:
            raise UserError("give either --suite or --docs/--golden, not both")
        sets = load_suite(suite)
        if unknown := sorted(set(only or ()) - {s.name for s in sets}):
            raise UserError(f"no set named {', '.join(unknown)} in {suite}")
        return [s for s in sets if not only or s.name in only]
    if only:
        raise UserError("--set picks sets of a --suite")
    return from_pairs(docs or [], golden or [])


def open_engine(settings: Settings, embedder: Embedder, gate: answerability.Model | None = None) -> Engine:
    """An engine on a set's own index (its `EvalSet.settings`), sharing the (slow to load)
    embedder; `gate` replaces the calibrated answerability model (calibration starts from one
    that answers everything)."""
    config = rag_config(settings)
    return Engine(config, open_index(config.index), embedder, make_generator(config.llm), gate)


T = TypeVar("T")


def run_closing(engine: Engine, work: Coroutine[Any, Any, T]) -> T:
    """`work` on an event loop of its own (asyncio.run), the engine's LLM clients closed before
    that loop ends. A client's connections belong to the loop they were opened on: reused on the
    next loop (the answers after the searches, the next set) they fail with "Event loop is
    closed"; closed here, the client opens new ones on the next loop."""
    async def closing() -> T:
        try:
            return await work
        finally:
            await engine.aclose()

    return asyncio.run(closing())


def prepare(engine: Engine, settings: Settings, eval_set: EvalSet, cases: list[GoldenCase], log: TextIO) -> Path:
    """Check the gold docs exist, then index the set's docs (`settings`: the engine's) when its
    index is missing or was built from another folder. Returns the docs folder."""
    root = eval_set.docs or Path(settings.docs_dir)
    if not root.is_dir():
        raise UserError(f"docs folder {root} does not exist")
    missing = sorted({p for c in cases for p in c.gold_doc_ids if not (root / p).is_file()})
    if missing:
        raise UserError(f"gold doc ids not found under {root}: {', '.join(missing[:5])}"
                        + (f" and {len(missing) - 5} more" if len(missing) > 5 else ""))
    stats = ensure_index(engine, lease_config(settings), root)
    if stats is not None:
        print(f"indexed {root}: {stats.documents} documents, {stats.chunks} chunks in {stats.seconds:.1f}s", file=log)
    return root
