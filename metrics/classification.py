"""HELM's population-level classification F1 (``classification_metrics.py::ClassificationMetric`` with its default
``averages=["macro", "micro"]`` and no ``labels``, as HELM Classic's civil_comments, imdb and RAFT run specs
use it): ``classification_macro_f1`` and ``classification_micro_f1``.

HELM normalises each correct reference and the output (``normalize_text`` with articles kept), fits scikit-learn's
``MultiLabelBinarizer`` on the **correct references** of the run's instances, and takes ``f1_score`` of the
binarised rows. So the classes are the labels some instance has as its answer: an output naming anything else
(a class never correct in the run, or free text) is dropped by the binarizer, a miss for the instance's class
and a false positive for no class. Macro F1 is the plain mean of the classes' F1 (a class never predicted
correctly scores 0); micro F1 pools the classes' true positives, false positives and false negatives.

Each instance records its per-label counts as sparse stats (the ones :mod:`helmflow.metrics.enterprise`'s
weighted F1 records, under this metric's own prefix), so the run's values and their bootstrap intervals come
from summed counts, exactly as the binarised matrix gives them on the same instances.
"""

from __future__ import annotations

from helmflow.metrics import Counted, HelmEquivalent, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.enterprise import label_counts, per_label

PREFIX = "classification_f1:"


def _classes(sums: dict[str, float]) -> dict[str, tuple[float, float, float]]:
    """(tp, fp, fn) of each class the binarizer knows: a label some instance has as its correct answer."""
    out = {}
    for label, counts in per_label(sums, PREFIX).items():
        tp, fp, fn = counts.get("tp", 0.0), counts.get("fp", 0.0), counts.get("fn", 0.0)
        if tp + fn:
            out[label] = (tp, fp, fn)
    return out


def _f1(tp: float, fp: float, fn: float) -> float:
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0  # scikit-learn's zero_division: 0


def macro_f1(sums: dict[str, float]) -> float | None:
    """scikit-learn's ``f1_score(average="macro")`` over the known classes; None with no class at all."""
    classes = _classes(sums)
    return sum(_f1(*c) for c in classes.values()) / len(classes) if classes else None


def micro_f1(sums: dict[str, float]) -> float | None:
    """scikit-learn's ``f1_score(average="micro")``: F1 of the counts pooled over the known classes."""
    classes = _classes(sums)
    if not classes:
        return None
    return _f1(*(sum(c[k] for c in classes.values()) for k in range(3)))


@metric("classification_f1", version="1",
        helm=HelmEquivalent(("classification_macro_f1", "classification_micro_f1")),
        counted=(Counted("classification_macro_f1", PREFIX, macro_f1),
                 Counted("classification_micro_f1", PREFIX, micro_f1)))
def classification_f1(x: MetricInput) -> dict[str, float]:
    """One generation's per-label counts; the run's ``classification_macro_f1`` and ``classification_micro_f1``."""
    if not x.completions:
        return {}
    return label_counts(x.correct_texts, x.completions[0].text, PREFIX)
