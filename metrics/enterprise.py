"""HELM's Enterprise metrics: ``float_equiv`` (ConvFinQA calculations, ``conv_fin_qa_calc_metrics.py``) and
``classification_weighted_f1`` (``classification_metrics.py`` with ``averages=["weighted"]``).

``float_equiv`` compares the first number in the output with the first number in the (single) reference,
within 1e-6; an output or reference without a number scores 0 (HELM's code; its docstring says 1).
``classification_weighted_f1`` is a run-level number: HELM normalises each reference and the output
(``normalize_text``, articles kept), binarises them over the labels seen and takes scikit-learn's support-weighted F1.
Each instance records its per-label true/false positives and false negatives as sparse counts, so the
run's value (and its bootstrap) comes from their sums, exactly as the binarised matrix gives it.
"""

from __future__ import annotations

import re

from helmflow.metrics import Counted, HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.reference import normalize_text

NUMBER = re.compile(r"[-+]?(?:(?:\d*\.\d+)|(?:\d+\.?))(?:[Ee][+-]?\d+)?")  # HELM's _strip_string pattern


def first_number(text: str) -> float | None:
    match = NUMBER.search(text)
    if not match:
        return None
    try:
        return float(match.group(0))
    except ValueError:
        return None


def float_equiv_score(gold: str, pred: str, eps: float = 1e-6) -> float:
    """HELM's ``float_equiv``: the first numbers of both strings within ``eps``; 0 when either has none."""
    a, b = first_number(pred), first_number(gold)
    if a is None or b is None:
        return 0.0
    return float(abs(a - b) < eps)


@metric("float_equiv", version="1", helm=HelmEquivalent(("float_equiv",)))
def float_equiv(x: MetricInput) -> dict[str, float]:
    golds = x.correct_texts
    if not golds or not x.completions:
        return {}
    return {"float_equiv": float_equiv_score(golds[0], x.completions[0].text)}


PREFIX = "classification_weighted_f1:"


def label_counts(golds: list[str], pred: str, prefix: str = PREFIX) -> dict[str, float]:
    """One instance's per-label counts (``tp:``, ``fp:``, ``fn:`` + normalised label) over its binarised row."""
    true = {normalize_text(g, remove_articles=False) for g in golds if g}
    predicted = {normalize_text(pred, remove_articles=False)} if pred else set()
    out: dict[str, float] = {}
    for label in true | predicted:
        kind = "tp" if label in true and label in predicted else "fn" if label in true else "fp"
        out[f"{prefix}{kind}:{label}"] = 1.0
    return out


def per_label(sums: dict[str, float], prefix: str = PREFIX) -> dict[str, dict[str, float]]:
    """The summed counts of :func:`label_counts` by label: ``{label: {"tp"|"fp"|"fn": count}}``."""
    labels: dict[str, dict[str, float]] = {}
    for name, value in sums.items():
        if name.startswith(prefix):
            kind, _, label = name[len(prefix):].partition(":")
            labels.setdefault(label, {})[kind] = value
    return labels


def weighted_f1(sums: dict[str, float]) -> float | None:
    """scikit-learn's ``f1_score(average="weighted")`` from per-label counts: each label's F1 weighted by its
    support (true count); a label with no true or predicted hit scores 0; None with no support at all."""
    labels = per_label(sums)
    total = weighted = 0.0
    for counts in labels.values():
        tp, fp, fn = counts.get("tp", 0.0), counts.get("fp", 0.0), counts.get("fn", 0.0)
        support = tp + fn
        total += support
        if support and tp:
            weighted += support * 2 * tp / (2 * tp + fp + fn)
    return weighted / total if total else None


@metric("classification_weighted_f1", version="1", helm=HelmEquivalent(("classification_weighted_f1",)),
        counted=(Counted("classification_weighted_f1", PREFIX, weighted_f1),))
def classification_weighted_f1(x: MetricInput) -> dict[str, float]:
    if not x.completions:
        return {}
    return label_counts(x.correct_texts, x.completions[0].text)
