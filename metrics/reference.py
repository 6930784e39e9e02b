"""Reference matching: compare the model's text with the correct references (best over samples)."""

from __future__ import annotations

from helmflow.metrics import metric
from helmflow.metrics.base import MetricInput


def exact_match_score(prediction: str, reference: str) -> float:
    return float(prediction.strip() == reference.strip())


@metric("exact_match", version="1")
def exact_match(x: MetricInput) -> dict[str, float]:
    best = max((exact_match_score(t, r) for t in x.texts for r in x.correct_texts), default=0.0)
    return {"exact_match": best}
