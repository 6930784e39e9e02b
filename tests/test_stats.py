"""Bootstrap intervals on known data, and HELM's board aggregates on a hand-computed table."""

from __future__ import annotations

import math

import numpy as np
import pytest

from helmflow.stats import mean_ci, mean_cis, mean_scores, win_rates


def test_bootstrap_interval_on_bernoulli_draws_matches_the_normal_approximation():
    draws = np.random.default_rng(12345).binomial(1, 0.7, size=2000).astype(float)
    mean, low, high = mean_ci(draws)
    assert mean == pytest.approx(draws.mean())
    assert low < 0.7 < high
    normal_width = 2 * 1.959964 * math.sqrt(mean * (1 - mean) / draws.size)
    assert abs((high - low) - normal_width) <= 0.10 * normal_width
    assert low < mean < high


def test_bootstrap_is_seeded_and_handles_tiny_samples():
    values = list(np.random.default_rng(0).random(37))
    assert mean_ci(values) == mean_ci(list(values))
    assert mean_ci(values, seed=1) != mean_ci(values, seed=2)
    assert mean_ci([0.25]) == (0.25, 0.25, 0.25)
    assert all(math.isnan(v) for v in mean_ci([]))
    assert mean_ci([1.0] * 50) == (1.0, 1.0, 1.0)


def test_intervals_of_many_groups_are_each_groups_own():
    rng = np.random.default_rng(7)
    groups = [rng.random(500), rng.binomial(1, 0.4, 500).astype(float), np.array([]), np.array([0.5]),
              rng.random(37), rng.random(2), rng.random(500), rng.random(5000), np.ones(37)]
    together = mean_cis(groups)
    assert all(math.isnan(v) for v in together[2])  # an empty group, as mean_ci gives it (NaN never equals itself)
    assert [t for i, t in enumerate(together) if i != 2] == [mean_ci(g) for i, g in enumerate(groups) if i != 2]
    assert mean_cis(groups, level=0.9, seed=3)[7] == mean_ci(groups[7], level=0.9, seed=3)
    assert mean_cis([]) == []


# A 3x3 board with one tie (c1: m2 = m3) and one missing cell (c2 for m3). Hand computation:
#   c1 (N=3): m1 beats 2 -> 2/2 = 1;  m2, m3 tie -> (0 + (2-1)/2)/2 = 0.25 each
#   c2 (N=2, m3 missing): m1 0/1 = 0;  m2 1/1 = 1
#   c3 (N=3): m1 0/2 = 0;  m2 1/2 = 0.5;  m3 2/2 = 1
#   mean win rate: m1 (1+0+0)/3 = 1/3;  m2 (0.25+1+0.5)/3 = 7/12;  m3 (0.25+1)/2 = 5/8 (its missing cell skipped)
TABLE = {
    "m1": {"c1": 0.9, "c2": 0.2, "c3": 0.3},
    "m2": {"c1": 0.5, "c2": 0.8, "c3": 0.6},
    "m3": {"c1": 0.5, "c2": None, "c3": 0.9},
}


def test_mean_win_rate_with_a_tie_and_a_missing_cell():
    assert win_rates(TABLE) == pytest.approx({"m1": 1 / 3, "m2": 7 / 12, "m3": 5 / 8})


def test_win_rate_direction_single_value_columns_and_empty_rows():
    lower = win_rates(TABLE, lower_is_better={"c3"})
    # c3 reversed: m1 1, m2 0.5, m3 0
    assert lower == pytest.approx({"m1": (1 + 0 + 1) / 3, "m2": (0.25 + 1 + 0.5) / 3, "m3": (0.25 + 0) / 2})
    table = {**TABLE, "m4": {"c1": None, "c4": 0.5}}  # c4 has one value: no ranking; m4 ranks nowhere
    rates = win_rates(table)
    assert rates["m4"] is None
    # m4 is absent from every ranked column, so the others are unchanged
    assert {k: rates[k] for k in TABLE} == pytest.approx({"m1": 1 / 3, "m2": 7 / 12, "m3": 5 / 8})
    nan = {"a": {"c": float("nan")}, "b": {"c": 1.0}}
    assert win_rates(nan) == {"a": None, "b": None}  # a NaN cell counts as missing


def test_mean_score_skips_missing_cells():
    assert mean_scores(TABLE) == pytest.approx({"m1": 1.4 / 3, "m2": 1.9 / 3, "m3": 0.7})
    assert mean_scores({"m": {"c": None}}) == {"m": None}
