"""Paired comparisons of two models (``helmflow compare``): the numbers against a hand computation on
hand-written per-instance stats, the Parquet it writes, and the one-line errors."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq
import pytest

from helmflow import compare
from helmflow.storage import Store
from tests.support.paired_fixtures import write_release

A = [1, 1, 1, 1, 0, 1, 1, 0]
B = [1, 0, 0, 1, 0, 0, 1, 1]  # A only right on 1, 2, 5; B only on 7


@pytest.fixture
def hand_store(tmp_path):
    store = Store(str(tmp_path / "store"))
    ids = [f"q{i}" for i in range(8)]
    write_release(store, "hand", "2026-01-02-0000hand", {
        ("pairs", "m/a"): ("run-pa", dict(zip(ids, map(float, A), strict=True))),
        ("pairs", "m/b"): ("run-pb", dict(zip(ids, map(float, B), strict=True))),
        ("two", "m/a"): ("run-ta", {"x": 1.0, "y": 1.0}),
        ("two", "m/b"): ("run-tb", {"x": 1.0, "y": 0.0, "only-b": 1.0}),  # only-b: not paired, left out
        ("graded", "m/a"): ("run-ga", {"x": 0.75, "y": 0.5, "z": 0.25}),
        ("graded", "m/b"): ("run-gb", {"x": 0.5, "y": 0.5, "z": 0.0}),
        ("solo", "m/a"): ("run-sa", {"x": 1.0}),
    })
    return store


def test_paired_interval_matches_a_hand_computation(hand_store, cli):
    out = cli("compare", "hand", "m/a", "m/b", "--storage", hand_store.root)
    assert out.returncode == 0, out.stderr
    key = "leaderboards/hand/2026-01-02-0000hand/comparisons/m--a__m--b.parquet"
    assert key in out.stdout.replace("\n", "")
    table = pq.read_table(hand_store.path(key))
    assert table.schema.equals(compare.COMPARISON_SCHEMA, check_metadata=False)
    rows = {r["scenario"]: r for r in table.to_pylist()}

    # pairs: the differences are 0,1,1,0,0,1,0,-1; the bootstrap draws instances (seed 0, 1000 resamples)
    d = np.array(A, float) - np.array(B, float)
    draws = d[np.random.default_rng(0).integers(0, 8, size=(1000, 8))].mean(axis=1)
    low, high = np.quantile(draws, [0.025, 0.975])
    p = rows["pairs"]
    assert (p["n"], p["mean_a"], p["mean_b"], p["delta"]) == (8, 0.75, 0.5, 0.25)
    assert (p["ci_low"], p["ci_high"]) == (pytest.approx(low), pytest.approx(high))
    assert p["ci_low"] < 0 < p["ci_high"] and not p["significant"]
    # McNemar exact: 3 discordant pairs for A, 1 for B; p = 2 * P(X <= 1), X ~ Bin(4, 1/2) = 2 * 5/16
    assert (p["binary"], p["a_only"], p["b_only"]) == (True, 3, 1)
    assert p["p_value"] == pytest.approx(0.625)

    # two: differences 0 and 1 on the shared instances; a resample's mean is 0, 1/2 or 1 with chances
    # 1/4, 1/2, 1/4, so the 2.5% and 97.5% quantiles of 1000 draws are 0 and 1
    t = rows["two"]
    assert (t["n"], t["delta"], t["ci_low"], t["ci_high"]) == (2, 0.5, 0.0, 1.0)
    assert not t["significant"] and t["p_value"] == 1.0  # one discordant pair: p = 2 * 1/2

    # graded: not 0/1, so no McNemar; every difference is >= 0 and one is 0.25
    g = rows["graded"]
    assert g["binary"] is False and g["p_value"] is None and g["delta"] == pytest.approx(0.5 / 3)
    assert 0 <= g["ci_low"] < g["ci_high"] <= 0.25

    assert rows["solo"]["note"] == "no run of m/b" and rows["solo"]["delta"] is None
    assert "not separable" in out.stdout and "0.625 (3 / 1)" in out.stdout


@pytest.mark.slow
def test_significant_difference_is_said(tmp_path, cli):
    store = Store(str(tmp_path / "store"))
    ids = [f"q{i}" for i in range(40)]
    write_release(store, "hand", "2026-01-02-0000sure", {
        ("s", "m/a"): ("ra", dict.fromkeys(ids, 1.0)),
        ("s", "m/b"): ("rb", {i: float(k % 2) for k, i in enumerate(ids)}),
    })
    out = cli("compare", "hand", "m/b", "m/a", "--storage", store.root)
    assert out.returncode == 0, out.stderr
    row = pq.read_table(store.path("leaderboards/hand/2026-01-02-0000sure/comparisons/m--b__m--a.parquet")).to_pylist()[0]
    assert row["delta"] == -0.5 and row["ci_high"] < 0 and row["significant"]
    assert row["p_value"] == pytest.approx(2 * 0.5 ** 20)  # 0 discordant for B over 20: McNemar exact
    assert "B better" in out.stdout


@pytest.mark.parametrize("argv, message", [
    (["hand", "m/a", "m/zzz"], "has no model 'm/zzz' (its models: m/a, m/b)"),
    (["nope", "m/a", "m/b"], "board 'nope' has no release"),
    (["hand", "m/a", "m/b", "--release", "2020-01-01-deadbeef"], "has no release '2020-01-01-deadbeef'"),
    (["hand", "m/a", "m/a"], "two different models"),
])
def test_bad_names_are_one_line_and_exit_2(hand_store, cli, argv, message):
    out = cli("compare", *argv, "--storage", hand_store.root)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and message in out.stderr, out.stderr
    assert not hand_store.exists("leaderboards/hand/2026-01-02-0000hand/comparisons")


def test_no_shared_instance_is_a_note(tmp_path):
    assert compare.paired({"a": 1.0}, {"b": 0.0}) is None
    store = Store(str(tmp_path / "store"))
    write_release(store, "hand", "2026-01-02-0000none", {("s", "m/a"): ("ra", {"a": 1.0}),
                                                          ("s", "m/b"): ("rb", {"b": 1.0})})
    rows = compare.compare_models(store, compare.load_release(store, "hand"), "m/a", "m/b")
    assert rows[0]["note"] == "no instance scored by both" and rows[0]["n"] == 0
    one = compare.paired({"a": 1.0}, {"a": 0.0})  # one instance: the difference, no spread
    assert one is not None and (one.delta, one.ci_low, one.ci_high, one.significant) == (1.0, 1.0, 1.0, True)


def test_every_pair_at_once_equals_each_pair_on_its_own(tmp_path):
    """The compare page's table (one joint bootstrap per scenario) gives each pair compare's numbers,
    and a scenario whose runs scored different instances falls back to each pair's shared ones."""
    store = Store(str(tmp_path / "store"))
    rng = np.random.default_rng(5)
    ids = [f"q{i}" for i in range(25)]
    cells = {}
    for k, m in enumerate(("m/a", "m/b", "m/c", "m/d")):
        cells[("same", m)] = (f"same-{k}", {i: float(rng.random() < 0.4 + 0.1 * k) for i in ids})
        cells[("ragged", m)] = (f"ragged-{k}", {i: float(rng.random() < 0.5) for i in ids[k:]})  # fewer each time
    write_release(store, "hand", "2026-01-02-000pairs", cells)
    release = compare.load_release(store, "hand")
    together = compare.all_pairs(store, release)
    assert len(together) == 2 * 6
    for row in together:
        alone = next(r for r in compare.compare_models(store, release, row["deployment_a"], row["deployment_b"])
                     if r["scenario"] == row["scenario"])
        assert row["n"] == alone["n"] and (row["a_only"], row["b_only"]) == (alone["a_only"], alone["b_only"])
        for key in ("delta", "ci_low", "ci_high", "p_value"):
            assert row[key] == pytest.approx(alone[key], abs=1e-12), (row, key)
    assert {r["n"] for r in together if r["scenario"] == "ragged"} == {24, 23, 22}
