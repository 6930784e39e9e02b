"""A board-wide metric declares on ``@metric`` which adapter methods it attaches to and which metric
group it adds; planning reads only that declaration (the metric's module is all a new one costs)."""

from __future__ import annotations

import pytest

from helmflow.clients import load_deployments
from helmflow.metrics import METRICS, BoardWide, HookColumn, metric
from helmflow.plan.compile import plan_board
from helmflow.plan.extras import board_wide_groups, with_board_wide
from helmflow.plan.spec import BoardError, MetricGroup, load_board


@pytest.fixture
def reply_length(monkeypatch):
    monkeypatch.setattr(METRICS, "_items", dict(METRICS._items))
    hook = BoardWide(methods=("chat",), group="length", group_fallback="reply_length", group_description="how long",
                     columns=(HookColumn("reply_chars", "characters per reply", lower_is_better=True),))
    metric("reply_length", version="1", board_wide=hook)(lambda x: {"reply_chars": 1.0})
    return "reply_length"


def test_a_declared_hook_attaches_to_its_methods_and_adds_its_group(reply_length):
    plan = plan_board(load_board("demo"), load_deployments(), max_instances=2)
    scenarios = [with_board_wide(s, [reply_length]) for s in plan.scenarios]
    chat = [s.label for s in scenarios if s.adapter.method == "chat"]
    assert chat and [s.label for s in scenarios if reply_length in s.metrics] == chat
    assert all(s.metrics[-1] == reply_length for s in scenarios if s.label in chat)  # after the scenario's own

    [group] = board_wide_groups(scenarios, [reply_length], [])
    assert group.name == "length" and [c.scenario for c in group.columns] == chat
    assert {(c.metric, c.lower_is_better) for c in group.columns} == {("reply_chars", True)}
    taken = MetricGroup(name="length", columns=group.columns)
    assert [g.name for g in board_wide_groups(scenarios, [reply_length], [taken])] == ["reply_length"]


def test_a_metric_without_a_hook_is_refused():
    plan = plan_board(load_board("demo"), load_deployments(), max_instances=2)
    with pytest.raises(BoardError, match="'exact_match' is not a board-wide metric"):
        with_board_wide(plan.scenarios[0], ["exact_match"])
