"""The calibration bootstrap computes a block of resamples at once (``Pooled.batched``). Its values must
be exactly those of HELM's per-resample definitions (``ece``, ``selective_accuracies``), draw by draw, on
the very resamples the bootstrap uses, so every interval stays bit-identical."""

from __future__ import annotations

import numpy as np
import pytest

from helmflow.metrics.calibration import CONFIDENCE, CORRECT, POOLED
from helmflow.stats import pooled_ci, resamples

BOOTSTRAPPED = [p for p in POOLED if p.bootstrap]


def cases():
    """(name, probs, correct): random data of several sizes, ties, all right, all wrong, bin edges."""
    rng = np.random.default_rng(7)
    for n in (2, 3, 5, 9, 10, 11, 19, 20, 21, 97, 128, 129, 1000, 3001):
        yield f"uniform-{n}", rng.uniform(0, 1, n), (rng.uniform(0, 1, n) < 0.6).astype(float)
    for n in (4, 12, 50, 333):
        probs = rng.choice([0.25, 0.5, 0.5, 0.75, 1.0], n)  # heavy ties: boundaries merge
        yield f"ties-{n}", probs, (rng.uniform(0, 1, n) < probs).astype(float)
    yield "all-right", rng.uniform(0.2, 1, 40), np.ones(40)
    yield "all-wrong", rng.uniform(0.2, 1, 40), np.zeros(40)
    yield "one-value", np.full(30, 0.4), (rng.uniform(0, 1, 30) < 0.5).astype(float)
    edges = np.array([0.0, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 0.75, 0.9, 1.0])  # confidences on midpoints and on 1.0
    yield "edges", rng.choice(edges, 200), (rng.uniform(0, 1, 200) < 0.5).astype(float)
    yield "tiny", 10.0 ** -rng.uniform(0, 300, 60), (rng.uniform(0, 1, 60) < 0.1).astype(float)


@pytest.mark.parametrize("pooled", BOOTSTRAPPED, ids=lambda p: p.name)
def test_batched_draws_equal_the_per_resample_definition_exactly(pooled):
    checked = 0
    for name, probs, correct in cases():
        data = {CONFIDENCE: probs, CORRECT: correct}
        n = len(probs)
        for idx in resamples(n):
            one_by_one = np.array([pooled.fn({k: v[row] for k, v in data.items()}, n) for row in idx])
            at_once = np.asarray(pooled.batched({k: v[idx] for k, v in data.items()}, n))
            assert at_once.shape == one_by_one.shape
            assert np.array_equal(at_once, one_by_one), (pooled.name, name)
            checked += len(idx)
    assert checked > 20_000


@pytest.mark.parametrize("pooled", BOOTSTRAPPED, ids=lambda p: p.name)
def test_intervals_are_unchanged(pooled):
    rng = np.random.default_rng(3)
    for n in (2, 7, 150):
        columns = {CONFIDENCE: rng.uniform(0, 1, n), CORRECT: (rng.uniform(0, 1, n) < 0.5).astype(float)}
        old = pooled_ci(columns, pooled.fn, rows=True)
        new = pooled_ci(columns, pooled.fn, rows=True, batched=pooled.batched)
        assert new == old


def test_every_bootstrapped_calibration_number_is_batched():
    assert BOOTSTRAPPED and all(p.batched is not None for p in BOOTSTRAPPED)
