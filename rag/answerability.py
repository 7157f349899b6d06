"""Whether the retrieved passages can answer the question: one calibrated decision that gates
both the extractive answerer and the LLM.

A logistic model over retrieval features that do not depend on a corpus's scale (raw BM25 scores
do: they grow with document length and vocabulary, so only their ratio is used):
- `best_cosine`: the best dense match's cosine similarity;
- `dense_gap`: how far it stands out from the 8th dense match (a peaked list found something);
- `coverage`: share of the question's own content words (as asked, without the thread) that the
  selected chunks contain;
- `absent`: share of them that no full-text hit contains at all (a word the docs never use: the
  question is about something else);
- `text_gap`: 1 − second / best BM25 score (the full-text list found one clear match; 1 for a
  lone hit, 0 for none).
Others were tried (term coverage of the best full-text hit, the best single chunk's coverage, the
agreement of both lists, whether the chunks hold the kind of answer asked for): the fit gave them
little weight on the dev sets, so they were left out.
`python -m eval calibrate` fits the weights on the dev sets (each set weighing the same) and
picks the threshold; the parameter file it writes (rag/answerability.json) is loaded at start.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from rag.retrieval import Retrieval
from rag.signals import DENSE, TEXT
from rag.terms import content_terms, coverage, matched_terms, question_terms

FEATURES = ("best_cosine", "dense_gap", "coverage", "absent", "text_gap")
DEFAULT_FILE = Path(__file__).resolve().parent / "answerability.json"


class AnswerabilityError(ValueError):
    """An unusable parameter file (the message names it)."""


def features(question: str, retrieval: Retrieval) -> dict[str, float]:
    """The gate's inputs for a question (as asked) and its retrieval (of the searched query)."""
    dense, text = retrieval.hits(DENSE), retrieval.hits(TEXT)
    asked = question_terms(question)
    chunks = " ".join(f"{c.row.get('title', '')} {c.row.get('section', '')} {c.row.get('text', '')}"
                      for c in retrieval.selected)
    seen = {t for h in text for t in content_terms(h.row.get("search_text", ""))}
    return {
        "best_cosine": dense[0].score if dense else retrieval.best_similarity,
        "dense_gap": dense[0].score - dense[min(7, len(dense) - 1)].score if dense else 0.0,
        "coverage": coverage(asked, chunks) if retrieval.selected else 0.0,
        "absent": len(asked - matched_terms(asked, seen)) / len(asked) if asked else 0.0,
        "text_gap": ((1 - text[1].score / text[0].score if len(text) > 1 else 1.0)
                     if text and text[0].score > 0 else 0.0),
    }


@dataclass(frozen=True)
class Model:
    """p(answerable) = sigmoid(bias + Σ weight · (feature − mean) / scale); answer when ≥ threshold."""

    weights: dict[str, float]
    means: dict[str, float]
    scales: dict[str, float]
    bias: float
    threshold: float

    def probability(self, values: dict[str, float]) -> float:
        z = self.bias + sum(w * (values[f] - self.means[f]) / self.scales[f] for f, w in self.weights.items())
        return 1 / (1 + math.exp(-max(-30.0, min(30.0, z))))

    def answerable(self, values: dict[str, float]) -> tuple[bool, float]:
        p = self.probability(values)
        return p >= self.threshold, p

    def to_json(self, note: str, fitted_on: Sequence[str]) -> dict:
        return {"note": note, "fitted_on": list(fitted_on), "features": self.weights, "means": self.means,
                "scales": self.scales, "bias": self.bias, "threshold": self.threshold}


NEUTRAL = Model({}, {}, {}, 0.0, 0.0)  # answers everything (what calibration starts from)


def load(path: str | Path = "") -> Model:
    source = Path(path) if path else DEFAULT_FILE
    try:
        raw = json.loads(source.read_text(encoding="utf-8"))
        names = set(raw["features"])
        if not names <= set(FEATURES) or names - set(raw["means"]) or names - set(raw["scales"]):
            raise KeyError("features, means and scales must name the same known features")
        return Model({k: float(v) for k, v in raw["features"].items()}, {k: float(raw["means"][k]) for k in names},
                     {k: float(raw["scales"][k]) or 1.0 for k in names}, float(raw["bias"]), float(raw["threshold"]))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise AnswerabilityError(f"cannot use the answerability file {source}: {exc}") from None
