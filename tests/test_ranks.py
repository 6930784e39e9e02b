"""Rank intervals and tied groups: the bootstrap pieces against plain computations, a published
release's leaderboard columns, and the terminal table's ``2 (1–3)``."""

from __future__ import annotations

import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from helmflow import compare
from helmflow.aggregate import HEADLINE_RANKS, leaderboard_schema
from helmflow.stats import bootstrap_means, rank_interval, ranks, tied_groups, win_rate_draws, win_rates
from helmflow.terminal import print_board, rank_text
from tests.support.demo import build_demo


def test_ranks_share_the_better_rank_on_ties_and_skip_missing():
    out = ranks(np.array([[0.5, 0.9, 0.5, np.nan], [0.1, 0.1, 0.1, 0.2]]))
    assert out[0, :3].tolist() == [2, 1, 2] and math.isnan(out[0, 3])
    assert out[1].tolist() == [2, 2, 2, 1]


def test_vectorised_win_rates_equal_helms_win_rates():
    rng = np.random.default_rng(7)
    for _ in range(25):
        x = rng.integers(0, 4, size=(5, 4)).astype(float) / 4  # ties are common
        x[rng.random(x.shape) < 0.25] = np.nan
        table = {f"m{i}": {f"c{j}": (None if np.isnan(x[i, j]) else float(x[i, j])) for j in range(4)}
                 for i in range(5)}
        want = win_rates(table)
        got = win_rate_draws(x[None])[0]
        for i in range(5):
            if want[f"m{i}"] is None:
                assert math.isnan(got[i])
            else:
                assert got[i] == pytest.approx(want[f"m{i}"])


def test_instances_are_resampled_jointly_across_models():
    """Model 0 minus model 1 over the joint resamples is the paired bootstrap of their differences."""
    a = {f"q{i}": float(i % 3 == 0) for i in range(30)}
    b = {f"q{i}": float(i % 2 == 0) for i in range(30)}
    ids = sorted(a)
    draws = bootstrap_means(np.array([[a[i] for i in ids], [b[i] for i in ids]]))
    assert draws.shape == (1000, 2)
    low, high = np.quantile(draws[:, 0] - draws[:, 1], [0.025, 0.975])
    p = compare.paired(a, b)
    assert p is not None and (low, high) == (pytest.approx(p.ci_low), pytest.approx(p.ci_high))


def test_missing_values_are_left_out_of_a_resamples_mean():
    draws = bootstrap_means(np.array([[1.0, np.nan, 1.0], [np.nan, np.nan, np.nan]]))
    first = draws[:, 0]
    drew_only_the_gap = np.isnan(first)  # a resample of the middle instance alone: (1/3)^3 of them
    assert 0 < drew_only_the_gap.sum() < 100 and (first[~drew_only_the_gap] == 1.0).all()  # never counted as 0
    assert np.isnan(draws[:, 1]).all()


def test_rank_interval_holds_its_point_and_tied_groups_chain_from_each_groups_first():
    assert rank_interval(2.0, np.array([1.0] * 50 + [3.0] * 950)) == (2, 1, 3)
    assert rank_interval(math.nan, np.array([1.0])) == (None, None, None)
    groups = tied_groups({"a": (1, 1, 2), "b": (2, 1, 3), "c": (3, 3, 3), "d": (4, 3, 4), "e": (5, 5, 5),
                          "x": (None, None, None)})
    assert groups == {"a": 1, "b": 1, "c": 2, "d": 2, "e": 3}


def test_a_published_release_has_rank_columns(tmp_path):
    store, release_id = build_demo(str(tmp_path / "store"), max_instances=8)
    table = pq.read_table(store.path(f"leaderboards/demo/{release_id}/leaderboard.parquet"))
    assert set(HEADLINE_RANKS) <= set(table.schema.names)
    rows = table.to_pylist()
    labels = [lab for lab in ("arithmetic-3", "arithmetic-5x-chat")]
    for row in rows:
        assert row["rank_low"] <= row["rank"] <= row["rank_high"] and row["tied_group"] >= 1
        for lab in labels:
            assert row[f"{lab} rank_low"] <= row[f"{lab} rank"] <= row[f"{lab} rank_high"]
    # the point ranks are the ranks of the published numbers (highest mean score is 1)
    by_score = sorted(rows, key=lambda r: -r["mean_score"])
    assert by_score[0]["rank"] == 1 and [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)
    groups = [r["tied_group"] for r in rows]
    assert groups == sorted(groups) and groups[0] == 1


def test_an_old_leaderboard_without_ranks_still_reads(tmp_path):
    """Readers take ``row.get``: a release published before the rank columns shows no rank."""
    schema = leaderboard_schema(["s"])
    row = {name: None for name in schema.names if "rank" not in name and name != "tied_group"}
    row |= {"deployment": "m", "mean_score": 0.5, "s": 0.5}
    assert rank_text(row) == "—" and rank_text(row, "s ") == "—"


def test_the_terminal_table_shows_rank_and_interval():
    rows = [{"deployment": "m/a", "mean_score": 0.8, "mean_win_rate": 1.0, "s": 0.8, "s ci_low": 0.7, "s ci_high": 0.9,
             "rank": 1, "rank_low": 1, "rank_high": 2},
            {"deployment": "m/b", "mean_score": 0.7, "mean_win_rate": 0.0, "s": 0.7, "s ci_low": 0.6, "s ci_high": 0.8,
             "rank": 2, "rank_low": 1, "rank_high": 2}]
    console = Console(width=120, record=True)
    print_board(console, {"board": "b", "release_id": "r", "status": "complete", "table": rows, "scenarios": ["s"]})
    text = console.export_text()
    assert "rank (95%)" in text and "1 (1–2)" in text and "2 (1–2)" in text
    assert rank_text({"rank": 3, "rank_low": 3, "rank_high": 3}) == "3"


def test_models_not_separable_on_few_instances_share_a_tied_group(tmp_path):
    """Four instances: the noisy solver's rank interval reaches the solver's, so they are one group;
    the paired comparison agrees that the two cannot be told apart on the scenarios."""
    store, release_id = build_demo(str(tmp_path / "store"), max_instances=4)
    rows = {r["deployment"]: r for r in pq.read_table(
        store.path(f"leaderboards/demo/{release_id}/leaderboard.parquet")).to_pylist()}
    solver, noisy, echo = rows["offline/solver"], rows["offline/solver-noisy"], rows["offline/echo"]
    assert rank_text(solver) == "1" and rank_text(noisy) == "2 (1–2)" and rank_text(echo) == "3"
    assert (solver["tied_group"], noisy["tied_group"], echo["tied_group"]) == (1, 1, 2)
    pairs = compare.compare_models(store, compare.load_release(store, "demo"), "offline/solver", "offline/solver-noisy")
    assert not all(p["significant"] for p in pairs if p["scenario"] in ("arithmetic-3", "arithmetic-5x-chat"))
