"""Evaluation metrics: pure functions over rankings, predictions and timings.

Retrieval is scored at document level: a ranking is the list of distinct documents of the
selected chunks in the order they were selected, and a rank is 1-based (None = no gold doc).
"""
from __future__ import annotations

import math
import re
import string
from collections import Counter
from typing import Iterable, Mapping, Sequence


def doc_ranking(doc_paths: Iterable[str]) -> list[str]:
    """Distinct documents in order of first appearance (chunks of one doc count once)."""
    return list(dict.fromkeys(doc_paths))


def first_gold_rank(ranking: Sequence[str], gold: Iterable[str]) -> int | None:
    wanted = set(gold)
    return next((i for i, doc in enumerate(ranking, 1) if doc in wanted), None)


def hit_rate(ranks: Sequence[int | None]) -> float | None:
    return mean([float(r is not None) for r in ranks])


def mrr(ranks: Sequence[int | None]) -> float | None:
    return mean([1 / r if r is not None else 0.0 for r in ranks])


def recall(ranking: Sequence[str], gold: Iterable[str]) -> float:
    """Share of the gold documents that appear in the ranking."""
    wanted = set(gold)
    return len(wanted & set(ranking)) / len(wanted) if wanted else 0.0


def ndcg(ranking: Sequence[str], gold: Iterable[str], k: int = 10) -> float:
    """Binary-relevance nDCG@k: each gold document found at rank r gains 1/log2(r + 1)."""
    wanted = set(gold)
    dcg = sum(1 / math.log2(r + 1) for r, doc in enumerate(ranking[:k], 1) if doc in wanted)
    ideal = sum(1 / math.log2(r + 1) for r in range(1, min(len(wanted), k) + 1))
    return dcg / ideal if ideal else 0.0


def precision_recall(predicted: Sequence[bool], actual: Sequence[bool]) -> tuple[float | None, float | None]:
    """Precision and recall of the positive class; None where the denominator is empty."""
    true_pos = sum(p and a for p, a in zip(predicted, actual))
    predicted_pos, actual_pos = sum(predicted), sum(actual)
    return (
        true_pos / predicted_pos if predicted_pos else None,
        true_pos / actual_pos if actual_pos else None,
    )


def percentile(values: Sequence[float], p: float) -> float | None:
    """Nearest-rank percentile: the smallest value with at least p% of the values at or below it."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


_CITATION = re.compile(r"\[\d+(?:\s*,\s*\d+)*\]")
_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def answer_tokens(text: str) -> list[str]:
    """SQuAD-style normalisation (lower case, no punctuation or articles), citation marks removed."""
    text = _CITATION.sub(" ", text.lower()).translate(_PUNCTUATION)
    return _ARTICLES.sub(" ", text).split()


def token_f1(prediction: str, gold: str) -> float:
    """Harmonic mean of token precision and recall of an answer against a reference answer."""
    predicted, wanted = answer_tokens(prediction), answer_tokens(gold)
    common = sum((Counter(predicted) & Counter(wanted)).values())
    if not common:
        return 0.0
    precision, rec = common / len(predicted), common / len(wanted)
    return 2 * precision * rec / (precision + rec)


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def worst(figures: Mapping[str, float]) -> tuple[str, float]:
    """The set with the lowest figure, and that figure."""
    name = min(figures, key=lambda n: figures[n])
    return name, figures[name]


def left_out_key(left_out: Mapping[str, float], in_sample: float) -> tuple[float, float]:
    """How candidate defaults are ranked (higher first): by their worst left-out figure, each set
    scored with what the candidate fits (the gate's weights) fitted on the other sets, so a
    default that only holds while a set helps fit it loses; ties by the in-sample macro."""
    return worst(left_out)[1], in_sample
