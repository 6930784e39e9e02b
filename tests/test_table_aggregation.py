"""A metric group (summary table) declares its own aggregation: HELM's mean of the columns next to (or
instead of) the mean win rate; tables that declare none publish exactly what they did before."""

from __future__ import annotations

import pytest

from helmflow.aggregate import leaderboard_schema, mean_groups, rank
from helmflow.manifests import MetricGroupRecord
from helmflow.plan.spec import BoardError, MetricGroup, load_board

CELLS = {("a", "x/acc"): (0.8, 0.7, 0.9), ("a", "y/acc"): (0.4, None, None), ("b", "x/acc"): (0.5, None, None)}


def _group(name: str, aggregation: list[str] | None = None) -> MetricGroup:
    data = {"name": name, "columns": [{"scenario": "x", "metric": "acc"}, {"scenario": "y", "metric": "acc"}]}
    return MetricGroup.model_validate(data | ({"aggregation": aggregation} if aggregation else {}))


def test_a_table_declaring_mean_gets_the_mean_of_the_columns_each_model_has():
    both, default, mean_only = _group("both", ["mean", "win_rate"]), _group("plain"), _group("means", ["mean"])
    rows = {r["deployment"]: r for r in rank(["a", "b", "c"], [], {}, metric_groups=[both, default, mean_only],
                                             metric_cells=CELLS)}
    # a: (0.8 + 0.4) / 2; b has only x (HELM leaves missing cells out); c has none
    assert rows["a"]["both mean"] == pytest.approx(0.6) and rows["b"]["both mean"] == pytest.approx(0.5)
    assert rows["c"]["both mean"] is None
    assert rows["a"]["means mean"] == pytest.approx(0.6) and "means mean_win_rate" not in rows["a"]
    # the win rate is the one a table without a declaration gets, and such a table gets no mean
    assert rows["a"]["both mean_win_rate"] == rows["a"]["plain mean_win_rate"] is not None
    assert rows["b"]["both mean_win_rate"] == rows["b"]["plain mean_win_rate"]
    assert "plain mean" not in rows["a"]
    names = leaderboard_schema([], metric_groups=["both", "plain", "means"], mean_groups=mean_groups(
        [both, default, mean_only])).names
    assert "both mean" in names and "means mean" in names and "plain mean" not in names


def test_a_mean_over_columns_of_both_directions_is_refused():
    with pytest.raises(ValueError, match="lower is better"):
        MetricGroup.model_validate({"name": "g", "aggregation": ["mean"], "columns": [
            {"scenario": "x", "metric": "acc"}, {"scenario": "x", "metric": "latency_s", "lower_is_better": True}]})
    with pytest.raises(BoardError, match="aggregation"):
        load_board({"name": "b", "version": "1", "models": [], "scenarios": [], "metric_groups": [
            {"name": "g", "aggregation": ["median"], "columns": [{"scenario": "x", "metric": "acc"}]}]})


def test_tables_without_a_declaration_hash_and_publish_as_before():
    for group in load_board("lite").version_data()["metric_groups"]:
        assert "aggregation" not in group  # the board's version is unchanged
    record = MetricGroupRecord(**_group("plain").model_dump(mode="json"))
    assert "aggregation" not in record.to_json()
    assert MetricGroupRecord(**_group("m", ["mean"]).model_dump(mode="json")).to_json()["aggregation"] == ["mean"]
