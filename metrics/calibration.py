"""Calibration, as HELM's ``compute_calibration_metrics`` with the ``uncertainty-calibration`` package.

Per instance (the ``calibration`` metric):
- ``max_prob``: the model's confidence in its answer, ``exp(sum of the answer's token logprobs)``
  (multiple-choice joint with one output token: the probability of the letter it chose; generation:
  the probability of the whole completion). For the log-likelihood multiple-choice method
  (``multiple_choice_separate``) it is the softmax over the options' scores, at the chosen one.
- ``max_prob_correct``: whether that answer is right, HELM's ``int(exact_match)`` (a fractional
  score over several trials floors to 0).
- ``logprobs_available``: 1 when the deployment returned a logprob for every output token, else 0
  (then the instance has no ``max_prob``: a deployment without logprobs gets no calibration numbers,
  never zeros). Unlike HELM, which takes all-zero logprobs to mean "none returned" (its chat
  clients), a returned 0 is a probability of 1 here: missing logprobs are an empty list.

Per run (pooled over the instances that have both, :class:`helmflow.metrics.Pooled`):
- ``ece_10_bin``: expected calibration error with 10 equal-mass bins (``get_ece_em``): sorted
  confidences split by ``np.array_split`` into 10 near-equal chunks, bin boundaries at the midpoints
  between chunks (duplicates merged) and 1.0, each confidence in the first bin whose boundary is >= it
  (``np.searchsorted``, left), then sum over bins of (bin size / n) * |mean confidence - accuracy|;
  fewer instances than bins give one bin per instance;
- ``ece_1_bin``: |mean confidence - accuracy| (``get_ece`` with one equal-width bin);
- ``selective_cov_acc_area``: the area under the coverage-accuracy curve, the mean over k of the
  accuracy of the k most confident answers; ``selective_acc@10``: that accuracy at index
  floor(0.1 n) (the top 10%). Equal confidences keep instance-id order (a stable sort): HELM's
  ``np.argsort`` leaves their order to numpy's sort algorithm, which differs between builds;
- ``platt_ece_10_bin`` / ``platt_ece_1_bin``: the same after Platt scaling (a logistic regression of
  correctness on logit(confidence), fitted on the run itself by maximum likelihood, as HELM's
  ``LogisticRegression(C=1e10)``); 0 when every answer is right or every answer is wrong, as in HELM.
  No interval: refitting on a thousand resamples would cost more than all the rest of scoring;
- ``platt_coef`` / ``platt_intercept``: that fit's weights, on logit(confidence) with confidences
  clipped to [1e-12, 1 - 1e-12] (HELM's ``clf.coef_[0][0]``, ``clf.intercept_[0]``); absent when every
  answer is right or every answer is wrong, where HELM records neither. No interval.

A confidence of exactly 0 (a logprob of -inf) is kept with probability 0, as HELM keeps it.

HELM notes that a 10-bin ECE needs about 300 instances to be reliable; intervals are bootstrapped
over instances like every other number.
"""

from __future__ import annotations

import math
from collections import defaultdict
from statistics import fmean

import numpy as np

from helmflow.metrics import Pooled, metric
from helmflow.metrics.base import MetricInput
from helmflow.metrics.reference import exact_match_score, is_separate, option_scores, predictions

CONFIDENCE, CORRECT, AVAILABLE = "max_prob", "max_prob_correct", "logprobs_available"
NO_LOGPROBS = "not available: the deployment returned no token logprobs"


# --------------------------------------------------------------------------- the package's estimators
def chunk_starts(n: int, num_bins: int) -> np.ndarray:
    """Where each of ``np.array_split``'s chunks after the first begins (the first ``n % k`` are one
    longer), for ``k = min(num_bins, n)`` chunks of ``n`` sorted confidences."""
    k = min(num_bins, n)
    sizes = np.full(k, n // k)
    sizes[: n % k] += 1
    return np.cumsum(sizes)[:-1]


def equal_mass_bins(probs: np.ndarray, num_bins: int) -> np.ndarray:
    """``get_equal_bins``: upper bin boundaries holding near-equal numbers of confidences (last 1.0),
    at the midpoints between chunks, duplicates merged."""
    ordered = np.sort(probs)
    starts = chunk_starts(len(ordered), num_bins)
    return np.unique(np.append((ordered[starts - 1] + ordered[starts]) / 2.0, 1.0))


def plugin_ece(probs: np.ndarray, correct: np.ndarray, bounds: np.ndarray) -> float:
    """``plugin_ce`` with power 1: sum over bins of (size / n) * |mean confidence - accuracy|, that is
    sum over bins of |sum of confidences - number correct| / n."""
    which = np.searchsorted(bounds, probs)
    size = len(bounds) + 1
    gap = np.bincount(which, weights=probs, minlength=size) - np.bincount(which, weights=correct, minlength=size)
    return float(np.abs(gap).sum() / len(probs))


def ece(probs: np.ndarray, correct: np.ndarray, num_bins: int) -> float:
    """10 bins: equal mass (``get_ece_em``); 1 bin: |mean confidence - accuracy| (``get_ece``)."""
    bounds = np.array([1.0]) if num_bins == 1 else equal_mass_bins(probs, num_bins)
    return plugin_ece(probs, correct, bounds)


def selective_accuracies(probs: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Accuracy of the k most confident answers, for k = 1..n (ties in the given order)."""
    order = np.argsort(-probs, kind="stable")
    return np.cumsum(correct[order]) / np.arange(1, len(order) + 1)


# --------------------------------------------------------------------------- the same, per resample
# The bootstrap needs each estimator on a thousand resamples of a run's instances. These compute it for
# every row of a (resamples, instances) block at once, and return exactly what the functions above
# return row by row (the same additions in the same order, so intervals are bit-identical; see
# tests/test_calibration_batched.py): one Python call per resample cost more than the rest of scoring.
def _row_sums(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``values[r, :lengths[r]].sum()`` for each row r. Rows are summed in groups of one length:
    numpy's pairwise sum of a row depends on its length, so padding zeros could change the rounding."""
    out = np.empty(len(values))
    for length in np.unique(lengths):
        which = lengths == length
        out[which] = values[which, :length].sum(axis=1)
    return out


def ece_rows(probs: np.ndarray, correct: np.ndarray, num_bins: int) -> np.ndarray:
    """:func:`ece` of each row: the boundaries of :func:`equal_mass_bins`, sorted with ties marked
    instead of removed, each confidence's bin = how many distinct boundaries lie below it (what
    ``np.searchsorted`` left returns), and per-bin sums by one ``np.bincount`` over all rows (which
    adds each row's values in order, as the per-row ``np.bincount`` does)."""
    rows, n = probs.shape
    if num_bins == 1:
        bounds = np.ones((rows, 1))
    else:
        ordered = np.sort(probs, axis=1)
        starts = chunk_starts(n, num_bins)
        bounds = np.sort(np.column_stack([(ordered[:, starts - 1] + ordered[:, starts]) / 2.0, np.ones(rows)]), axis=1)
    distinct = np.ones(bounds.shape, dtype=bool)
    distinct[:, 1:] = bounds[:, 1:] != bounds[:, :-1]
    which = np.zeros(probs.shape, dtype=np.intp)
    for j in range(bounds.shape[1]):
        which += distinct[:, j, None] & (bounds[:, j, None] < probs)
    size = bounds.shape[1] + 1
    flat = (which + size * np.arange(rows)[:, None]).ravel()
    gap = (np.bincount(flat, weights=probs.ravel(), minlength=rows * size)
           - np.bincount(flat, weights=correct.ravel(), minlength=rows * size)).reshape(rows, size)
    return _row_sums(np.abs(gap), distinct.sum(axis=1) + 1) / n


def selective_accuracies_rows(probs: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """:func:`selective_accuracies` of each row (a stable sort orders ties the same way in both)."""
    order = np.argsort(-probs, axis=1, kind="stable")
    return np.cumsum(np.take_along_axis(correct, order, axis=1), axis=1) / np.arange(1, probs.shape[1] + 1)


def platt_fit(probs: np.ndarray, correct: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A logistic fit of correctness on logit(confidence), confidences clipped to [1e-12, 1 - 1e-12] as
    the calibration package does (Newton's method on the unregularised log-likelihood: HELM's C=1e10
    makes sklearn's penalty negligible): the weights (coefficient, intercept) and the recalibrated
    confidences."""
    p = np.clip(probs, 1e-12, 1 - 1e-12)
    x = np.log(p / (1 - p))
    features = np.stack([x, np.ones_like(x)], axis=1)
    w = np.zeros(2)
    for _ in range(30):
        fitted = 1 / (1 + np.exp(-features @ w))
        gradient = features.T @ (correct - fitted)
        hessian = features.T @ (features * (fitted * (1 - fitted))[:, None]) + 1e-10 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        w += step
        if np.abs(step).max() < 1e-9:
            break
    return w, 1 / (1 + np.exp(-features @ w))


def platt_scaled(probs: np.ndarray, correct: np.ndarray) -> np.ndarray:
    """Confidences recalibrated by :func:`platt_fit`."""
    return platt_fit(probs, correct)[1]


def _columns(columns: dict[str, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    return np.asarray(columns[CONFIDENCE], dtype=float), np.asarray(columns[CORRECT], dtype=float)


def _platt_ece(num_bins: int):
    def fn(columns: dict[str, np.ndarray], n: int) -> float:
        probs, correct = _columns(columns)
        if correct.sum() in (0, len(correct)):
            return 0.0  # HELM: the fit has nothing to separate
        with np.errstate(over="ignore"):  # separable data drive the fit's weights up, as in sklearn
            return ece(platt_scaled(probs, correct), correct, num_bins)

    return fn


def _platt_weight(index: int):
    """HELM's ``platt_coef`` (0) or ``platt_intercept`` (1): absent (NaN) when every answer is right or
    every answer is wrong, where HELM fits nothing and records neither."""
    def fn(columns: dict[str, np.ndarray], n: int) -> float:
        probs, correct = _columns(columns)
        if correct.sum() in (0, len(correct)):
            return math.nan
        with np.errstate(over="ignore"):
            return float(platt_fit(probs, correct)[0][index])

    return fn


def _pooled(name: str, fn, batched=None, bootstrap: bool = True) -> Pooled:
    return Pooled(name, (CONFIDENCE, CORRECT), fn, rows=True, unavailable=(AVAILABLE, NO_LOGPROBS), bootstrap=bootstrap,
                  batched=batched)


POOLED = (
    _pooled("ece_10_bin", lambda c, n: ece(*_columns(c), 10), lambda c, n: ece_rows(*_columns(c), 10)),
    _pooled("ece_1_bin", lambda c, n: ece(*_columns(c), 1), lambda c, n: ece_rows(*_columns(c), 1)),
    _pooled("selective_cov_acc_area", lambda c, n: float(selective_accuracies(*_columns(c)).mean()),
            lambda c, n: selective_accuracies_rows(*_columns(c)).mean(axis=1)),
    _pooled("selective_acc@10", lambda c, n: float(selective_accuracies(*_columns(c))[int(0.1 * n)]),
            lambda c, n: selective_accuracies_rows(*_columns(c))[:, int(0.1 * n)]),
    _pooled("platt_ece_10_bin", _platt_ece(10), bootstrap=False),
    _pooled("platt_ece_1_bin", _platt_ece(1), bootstrap=False),
    _pooled("platt_coef", _platt_weight(0), bootstrap=False),
    _pooled("platt_intercept", _platt_weight(1), bootstrap=False),
)


# --------------------------------------------------------------------------- per instance
def sequence_prob(logprobs: list[float], tokens: list[str]) -> float | None:
    """exp(sum of the token logprobs); None when the deployment returned none for some token (or a
    NaN or +inf). A logprob of -inf is a probability of 0, kept as HELM's ``np.exp`` keeps it."""
    if not logprobs or len(logprobs) < len(tokens) or any(math.isnan(v) or v == math.inf for v in logprobs):
        return None
    return min(math.exp(sum(logprobs)), 1.0)


def separate_calibration(x: MetricInput) -> dict[str, float]:
    """Log-likelihood multiple choice: the softmax of the options' scores, at the best one (HELM)."""
    scored = option_scores(x)
    if len(scored) < len({r.sample_index for r in x.requests}):
        return {AVAILABLE: 0.0}
    probs, correct = [], []
    for options, scores in scored.values():
        weights = np.exp(np.array(scores) - max(scores))
        best = int(np.argmax(scores))
        probs.append(float(weights[best] / weights.sum()))
        correct.append(float(options[best] in x.correct_texts))
    return {AVAILABLE: 1.0, CONFIDENCE: fmean(probs), CORRECT: float(int(fmean(correct)))}


@metric("calibration", version="2", pooled=POOLED)
def calibration(x: MetricInput) -> dict[str, float]:
    """Confidence and correctness of the first sample of each trial (means over trials)."""
    if is_separate(x):
        return separate_calibration(x)
    per_sample = max(x.adapter.generation.num_outputs, 1)
    golds = x.correct_texts
    probs: dict[int, float | None] = {}
    correct: dict[int, float] = defaultdict(float)
    for (trial, pred), completion, request in zip(predictions(x), x.completions, x.requests, strict=True):
        if request.sample_index % per_sample:
            continue
        probs[trial] = sequence_prob(completion.logprobs, completion.tokens)
        correct[trial] = max((exact_match_score(g, pred) for g in golds), default=0.0)
    if not probs:
        return {}
    known = [p for p in probs.values() if p is not None]
    if len(known) != len(probs):
        return {AVAILABLE: 0.0}
    return {AVAILABLE: 1.0, CONFIDENCE: fmean(known), CORRECT: float(int(fmean(correct.values())))}
