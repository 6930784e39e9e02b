"""RULER's QA score (HELM's ``RulerQAMetric``, after RULER's ``string_match_part``): 1 when some correct
reference appears in the output, both lowercased, else 0. HELM reads the single completion's text as it came
back (nothing stripped or normalised)."""

from __future__ import annotations

from helmflow.metrics import HelmEquivalent, metric
from helmflow.metrics.base import MetricInput


def string_match_part(references: list[str], output: str) -> float:
    """The best over the references of "the reference, lowercased, is in the lowercased output"."""
    text = output.lower()
    return max((1.0 if r.lower() in text else 0.0 for r in references), default=0.0)


@metric("ruler_string_match_part", version="1", helm=HelmEquivalent(("ruler_string_match_part",)))
def ruler_string_match_part(x: MetricInput) -> dict[str, float]:
    if not x.completions:
        return {}
    return {"ruler_string_match_part": string_match_part(x.correct_texts, x.completions[0].text)}
