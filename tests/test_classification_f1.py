"""HELM's population-level classification macro and micro F1, from summed per-instance counts.

The expected numbers are what crfm-helm 0.5.16's ``ClassificationMetric().evaluate_instances`` returns on the
same seven (reference, output) pairs, and are worked by hand below."""

from __future__ import annotations

import pytest

from helmflow.metrics import METRICS, helm_stats
from helmflow.metrics.base import MetricInput
from helmflow.records import AdapterSpec, Completion, Input, Instance, Reference, Stat
from helmflow.scoring import summarize

ROWS = [("Yes", "yes"), ("Yes", "No."), ("No", " no"), ("No", "maybe"), ("Maybe", "Yes"), ("No", ""),
        ("Yes", "The answer is yes")]


def _stats(rows: list[tuple[str, str]]) -> list[Stat]:
    fn = METRICS.get("classification_f1").fn
    out = []
    for i, (gold, pred) in enumerate(rows):
        inst = Instance(id=f"id{i}", split="test", input=Input(text="x"), references=[Reference(text=gold, correct=True)])
        x = MetricInput(inst, [], [Completion(request_hash=f"h{i}", text=pred)], AdapterSpec())
        out += [Stat(instance_id=inst.id, split="test", name=n, value=v) for n, v in fn(x).items()]
    return out


def test_macro_and_micro_f1_are_helms():
    """Classes are the normalised correct references (yes, no, maybe). yes: tp 1 (row 1), fp 1 (row 5), fn 2
    (rows 2, 7; row 7's free text is no class) -> F1 0.4. no: tp 1, fp 1 (row 2), fn 2 (rows 4, 6) -> 0.4.
    maybe: tp 0, fp 1 (row 4), fn 1 -> 0. Macro (0.4 + 0.4 + 0) / 3; micro: tp 2, fp 3, fn 5 -> 4 / 12.
    crfm-helm 0.5.16: classification_macro_f1 0.26666666666666666, classification_micro_f1 0.3333333333333333."""
    summary = {s.name: s for s in summarize(_stats(ROWS))}
    assert summary["classification_macro_f1"].mean == pytest.approx(0.26666666666666666, abs=1e-12)
    assert summary["classification_micro_f1"].mean == pytest.approx(0.3333333333333333, abs=1e-12)
    assert summary["classification_macro_f1"].count == len(ROWS)
    assert summary["classification_macro_f1"].ci_low <= summary["classification_macro_f1"].mean
    assert not any(name.startswith("classification_f1:") for name in summary)  # the counts get no mean


def test_an_output_outside_the_classes_counts_for_no_class():
    """A prediction that is never a correct answer in the run changes neither F1 (HELM's binarizer drops it)."""
    one = {s.name: s.mean for s in summarize(_stats([("toxic", "toxic"), ("fine", "toxic")]))}
    other = {s.name: s.mean for s in summarize(_stats([("toxic", "toxic"), ("fine", "banana")]))}
    # toxic: tp 1, fp 1 -> 2/3; fine: fn 1 -> 0; macro 1/3, micro 2/(2+1+1)
    assert one["classification_macro_f1"] == pytest.approx(1 / 3)
    assert one["classification_micro_f1"] == pytest.approx(0.5)
    # banana: toxic 2/2 = 1, fine 0 -> macro 0.5; micro tp 1, fp 0, fn 1 -> 2/3
    assert other["classification_macro_f1"] == pytest.approx(0.5)
    assert other["classification_micro_f1"] == pytest.approx(2 / 3)


def test_import_helm_knows_their_helm_names():
    stats = helm_stats()
    assert stats["classification_macro_f1"] == stats["classification_micro_f1"] == "classification_f1"
