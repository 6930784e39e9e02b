"""HELM's float_equiv and classification_weighted_f1 on hand-worked cases, and their HELM names for import-helm."""

from __future__ import annotations

from collections import Counter

import pytest

from helmflow.metrics import helm_stats
from helmflow.metrics.enterprise import float_equiv_score, label_counts, weighted_f1


@pytest.mark.parametrize(("gold", "pred", "expected"), [
    ("12.5", "The answer is 12.50%", 1.0),  # the first number of each, units ignored
    ("3", "-3", 0.0),
    ("1000.0000001", "1e3", 1.0),  # within 1e-6
    ("1000.00001", "1e3", 0.0),
    ("abc", "abc", 0.0),  # no number: 0, as HELM's code (not its docstring) does
    ("7", "from 2019 to 2020 it rose by 7", 0.0),  # the first number is the year
])
def test_float_equiv_compares_first_numbers(gold, pred, expected):
    assert float_equiv_score(gold, pred) == expected


def test_weighted_f1_is_the_support_weighted_mean_of_per_label_f1():
    rows = [(["Positive"], "positive."), (["positive"], "negative"), (["negative"], " Negative"),
            (["neutral"], "positive"), (["neutral"], "")]
    sums: Counter[str] = Counter()
    for golds, pred in rows:
        sums.update(label_counts(golds, pred))
    # positive: tp 1, fp 1 (row 4), fn 1 (row 2) -> F1 2/4, support 2; negative: tp 1, fp 1 (row 2), fn 0 ->
    # F1 2/3, support 1; neutral: tp 0, fn 2 (an empty output predicts no label) -> 0, support 2
    assert weighted_f1(dict(sums)) == pytest.approx((2 * 1 / 2 + 1 * 2 / 3 + 2 * 0) / 5)
    assert weighted_f1({}) is None


def test_import_helm_knows_their_helm_names():
    stats = helm_stats()
    assert stats["float_equiv"] == "float_equiv"
    assert stats["classification_weighted_f1"] == "classification_weighted_f1"
