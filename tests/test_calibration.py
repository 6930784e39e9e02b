"""Calibration (HELM's ``compute_calibration_metrics``) on hand-checked cases, and "not available"
instead of 0 when a deployment returns no logprobs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helmflow.aggregate import unavailable_reason
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.calibration import ece, equal_mass_bins, platt_scaled, selective_accuracies
from helmflow.records import AdapterSpec, Completion, Input, Instance, Reference, Request, RequestBody
from helmflow.scoring import score_instances, summarize

P4 = np.array([0.9, 0.8, 0.6, 0.3])


def test_ten_bins_over_four_instances_is_one_bin_each():
    # fewer instances than bins: one bin per instance, so ECE = mean |p - correct|
    correct = np.array([1.0, 1.0, 0.0, 0.0])
    assert list(equal_mass_bins(P4, 10)) == pytest.approx([0.45, 0.7, 0.85, 1.0])
    assert ece(P4, correct, 10) == pytest.approx((0.1 + 0.2 + 0.6 + 0.3) / 4)


def test_equal_mass_bins_merge_tied_boundaries_and_put_ties_in_the_lower_bin():
    probs = np.array([0.5, 0.5, 0.5, 0.5, 0.9, 0.9])
    correct = np.array([1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    # chunks [.5 .5] [.5 .5] [.9 .9]: boundaries .5 (twice, merged), .7, 1.0
    assert list(equal_mass_bins(probs, 3)) == [0.5, 0.7, 1.0]
    # the four 0.5s share a bin (|0.5 - 1/4| over 4/6), the 0.9s another (|0.9 - 1| over 2/6)
    assert ece(probs, correct, 3) == pytest.approx(4 / 6 * 0.25 + 2 / 6 * 0.1)


def test_ten_equal_mass_bins_of_two():
    probs = np.arange(1, 21) / 20  # 0.05 .. 1.0
    correct = np.array([0, 0] * 5 + [1, 1] * 5, dtype=float)
    # bins of two: mean confidence 0.075, 0.175, ..., 0.975; accuracy 0 then 1
    expected = sum(abs(0.075 + 0.1 * b - (1.0 if b >= 5 else 0.0)) for b in range(10)) / 10
    assert ece(probs, correct, 10) == pytest.approx(expected)


def test_one_bin_is_mean_confidence_minus_accuracy():
    assert ece(P4, np.array([1.0, 0.0, 1.0, 0.0]), 1) == pytest.approx(abs(0.65 - 0.5))


def test_selective_accuracy_area_and_top_ten_percent():
    accs = selective_accuracies(P4, np.array([1.0, 0.0, 1.0, 0.0]))
    assert list(accs) == pytest.approx([1.0, 0.5, 2 / 3, 0.5])
    assert accs.mean() == pytest.approx((1 + 0.5 + 2 / 3 + 0.5) / 4)
    # ties keep the given order (stable), so the result does not depend on numpy's sort algorithm
    tied = selective_accuracies(np.array([0.7, 0.7, 0.7]), np.array([0.0, 1.0, 1.0]))
    assert list(tied) == pytest.approx([0.0, 0.5, 2 / 3])


def test_platt_scaling_matches_the_accuracy_on_average():
    rng = np.random.default_rng(0)
    probs = rng.uniform(0.3, 1.0, 200)
    correct = (rng.uniform(size=200) < probs**2).astype(float)  # overconfident
    scaled = platt_scaled(probs, correct)
    # maximum likelihood with an intercept: mean fitted probability = accuracy, so 1-bin ECE ~ 0
    assert scaled.mean() == pytest.approx(correct.mean(), abs=1e-8)
    assert ece(scaled, correct, 1) < 1e-8 < ece(probs, correct, 1)
    from sklearn import linear_model as sklearn  # the test extra: an independent implementation, never skipped
    clf = sklearn.LogisticRegression(C=1e10, solver="lbfgs").fit(np.log(probs / (1 - probs))[:, None], correct)
    assert scaled == pytest.approx(clf.predict_proba(np.log(probs / (1 - probs))[:, None])[:, 1], abs=1e-4)


# --------------------------------------------------------------------------- through scoring
def _instance(i: int) -> Instance:
    refs = [Reference(text="4", correct=True), Reference(text="5")]
    return Instance(id=f"id{i}", input=Input(text=f"q{i}"), references=refs)


def _pair(i: int, text: str, logprobs: list[float]) -> tuple[Request, Completion]:
    body = RequestBody(model="m", prompt=f"q{i}", max_tokens=1, temperature=0.0)
    req = Request(request_hash=f"h{i}", instance_id=f"id{i}", split="test", body=body, output_mapping={"A": "4", "B": "5"})
    comp = Completion(request_hash=f"h{i}", instance_id=f"id{i}", text=text, tokens=[text] if logprobs else [],
                      logprobs=logprobs)
    return req, comp


def _score(answers: list[tuple[str, list[float]]]):
    instances = [_instance(i) for i in range(len(answers))]
    pairs = [_pair(i, text, lps) for i, (text, lps) in enumerate(answers)]
    stats = score_instances(instances, [p[0] for p in pairs], [p[1] for p in pairs],
                            AdapterSpec(method="multiple_choice_joint"), ["calibration"])
    return stats, {s.name: s for s in summarize(stats)}


def test_the_metric_reads_the_chosen_letters_probability():
    x = MetricInput(_instance(0), *map(lambda v: [v], _pair(0, "A", [math.log(0.8)])), AdapterSpec())
    assert METRICS.get("calibration").fn(x) == {"logprobs_available": 1.0, "max_prob": pytest.approx(0.8),
                                               "max_prob_correct": 1.0}
    stats, summary = _score([("A", [math.log(0.9)]), ("B", [math.log(0.8)]), ("A", [math.log(0.6)]),
                             ("B", [math.log(0.3)])])
    assert summary["ece_1_bin"].mean == pytest.approx(0.15)  # mean 0.65, accuracy 0.5
    assert summary["ece_10_bin"].mean == pytest.approx((0.1 + 0.8 + 0.4 + 0.3) / 4)
    assert summary["selective_acc@10"].mean == 1.0 and summary["ece_10_bin"].count == 4
    assert summary["ece_10_bin"].ci_low <= summary["ece_10_bin"].mean <= summary["ece_10_bin"].ci_high


def test_no_logprobs_means_no_calibration_number_and_a_reason_never_a_zero():
    stats, summary = _score([("A", []), ("B", [])])
    assert {s.name for s in stats} == {"logprobs_available"}
    assert summary["logprobs_available"].mean == 0.0
    assert not {"ece_10_bin", "ece_1_bin", "selective_cov_acc_area", "platt_ece_10_bin"} & set(summary)
    why = unavailable_reason(list(summary.values()), "ece_10_bin")
    assert why is not None and "no token logprobs" in why
    # a run where the metric did not run at all has no reason to give
    assert unavailable_reason([], "ece_10_bin") is None


def test_platt_ece_is_zero_when_every_answer_is_right_as_in_helm():
    _, summary = _score([("A", [math.log(0.9)]), ("A", [math.log(0.5)])])
    assert summary["platt_ece_10_bin"].mean == 0.0 and summary["ece_1_bin"].mean == pytest.approx(0.3)
    assert math.isnan(summary["platt_ece_10_bin"].ci_low)  # no interval: a refit per resample costs too much


def test_a_confidence_of_zero_is_kept_with_probability_zero_as_in_helm():
    """HELM's max_prob is exp(the completion's logprob): a logprob of -inf gives 0, and the instance
    stays in every calibration number (it is not a deployment without logprobs)."""
    stats, summary = _score([("A", [math.log(0.9)]), ("B", [-math.inf]), ("A", [math.log(0.6)]),
                             ("B", [math.log(0.3)])])
    assert [s.value for s in stats if s.name == "max_prob"] == pytest.approx([0.9, 0.0, 0.6, 0.3])
    assert summary["logprobs_available"].mean == 1.0 and summary["ece_1_bin"].count == 4
    assert summary["ece_1_bin"].mean == pytest.approx(abs(1.8 / 4 - 0.5))  # mean confidence 0.45, accuracy 0.5
    # least confident last: the 0 sorts below 0.3
    assert summary["selective_cov_acc_area"].mean == pytest.approx((1 + 1 + 2 / 3 + 2 / 4) / 4)


def test_platt_coef_and_intercept_as_in_helm():
    """Two confidence levels: the maximum-likelihood logistic fit goes through each level's accuracy,
    so logit(accuracy) = coef * logit(confidence) + intercept at both, by hand. A confidence of 0 is
    clipped to 1e-12 before the logit, as in the calibration package HELM calls."""
    logit = lambda p: math.log(p / (1 - p))  # noqa: E731
    # 0.5 twice (1 right) and 0.8 four times (3 right): 0 = coef * 0 + b, logit(3/4) = coef * logit(0.8) + b
    answers = [("A", [math.log(0.5)]), ("B", [math.log(0.5)])] + [("A", [math.log(0.8)])] * 3 + [("B", [math.log(0.8)])]
    _, summary = _score(answers)
    assert summary["platt_coef"].mean == pytest.approx(math.log(3) / math.log(4), abs=1e-9)
    assert summary["platt_intercept"].mean == pytest.approx(0.0, abs=1e-9)
    assert summary["platt_ece_1_bin"].mean == pytest.approx(0.0, abs=1e-9)  # the fit hits both accuracies
    assert math.isnan(summary["platt_coef"].ci_low)  # no interval, like the Platt ECEs
    # confidence 0 twice (1 right) and 0.8 four times (3 right)
    answers = [("A", [-math.inf]), ("B", [-math.inf])] + answers[2:]
    _, summary = _score(answers)
    x0 = logit(1e-12)
    coef = math.log(3) / (math.log(4) - x0)
    assert summary["platt_coef"].mean == pytest.approx(coef, rel=1e-9)
    assert summary["platt_intercept"].mean == pytest.approx(-coef * x0, rel=1e-9)
    from sklearn import linear_model as sklearn  # HELM's own fit: LogisticRegression(C=1e10, solver="lbfgs")
    x = np.array([x0, x0] + [logit(0.8)] * 4)[:, None]
    clf = sklearn.LogisticRegression(C=1e10, solver="lbfgs").fit(x, [1, 0, 1, 1, 1, 0])
    assert summary["platt_coef"].mean == pytest.approx(clf.coef_[0][0], rel=1e-3)
    assert summary["platt_intercept"].mean == pytest.approx(clf.intercept_[0], rel=1e-3)


def test_no_platt_coef_when_every_answer_is_right_as_in_helm():
    _, summary = _score([("A", [math.log(0.9)]), ("A", [math.log(0.5)])])
    assert summary["platt_ece_1_bin"].mean == 0.0 and not {"platt_coef", "platt_intercept"} & set(summary)


# HELM 0.5.16's compute_calibration_metrics (uncertainty-calibration's estimators, sklearn's lbfgs Platt fit) on
# the cases above (benchmarks/helm_metric_parity.py, in a throwaway venv): its max_prob is np.exp(logprob), so
# -inf gives 0
HELM_OUTPUTS = [
    ([("A", [math.log(0.9)]), ("B", [-math.inf]), ("A", [math.log(0.6)]), ("B", [math.log(0.3)])],
     # separable (every right answer more confident than every wrong one): the fit has no finite optimum, and
     # both weights are wherever the optimiser stopped (HELM's lbfgs 13.50 and 2.85), so they are not compared
     {"ece_10_bin": 0.2, "ece_1_bin": 0.05, "selective_cov_acc_area": 0.7916666666666666, "selective_acc@10": 1.0}),
    ([("A", [-math.inf]), ("B", [-math.inf])] + [("A", [math.log(0.8)])] * 3 + [("B", [math.log(0.8)])],
     # tied confidences: the selective numbers depend on the order of ties (HELM's 0.8139 is numpy's sort
     # order, ours instance-id order), so they are not compared (documented in metrics/calibration.py)
     {"ece_10_bin": 0.2, "ece_1_bin": 0.1333333333333333, "platt_coef": 0.03785267248059973,
      "platt_intercept": 1.0459079856598226}),
]


@pytest.mark.parametrize("answers, helm", HELM_OUTPUTS)
def test_calibration_numbers_equal_helms_own(answers, helm):
    _, summary = _score(answers)
    for name, value in helm.items():
        # the Platt weights: ours is the exact maximum-likelihood fit, HELM's lbfgs stops within 2e-4 of it
        tolerance = 1e-3 if name.startswith("platt") else 1e-12
        assert summary[name].mean == pytest.approx(value, rel=tolerance, abs=1e-12), name
