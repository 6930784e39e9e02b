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


def test_a_board_turns_a_declared_metric_on_by_its_name_and_its_version_hashes_that_key(reply_length):
    entry = {"name": "dyck_language", "params": {"num_parenthesis_pairs": 2}, "adapter": {"method": "chat"}}
    board = {"name": "b", "version": "1", "models": ["offline/echo"], "max_instances": 2, "scenarios": [entry]}
    top = load_board({**board, reply_length: True})  # the spelling boards have always used (`<metric>: ...`)
    nested = load_board({**board, "board_wide": {reply_length: True}})
    assert top == nested and top.board_wide == {reply_length: True}
    assert top.version_data() == {**load_board(board).version_data(), reply_length: True}  # the old key, at the top
    assert load_board({**board, reply_length: False}).version_data() == load_board(board).version_data()
    with pytest.raises(BoardError, match="both at the top level and under board_wide"):
        load_board({**board, reply_length: True, "board_wide": {reply_length: True}})
    with pytest.raises(BoardError, match="unknown field"):
        load_board({**board, "exact_match": True})  # a metric without a hook is no board key

    plan = plan_board(top, load_deployments())
    assert plan.scenarios[0].metrics[-1] == reply_length and [g.name for g in plan.spec.metric_groups] == ["length"]
    off = plan_board(top, load_deployments(), board_wide={reply_length: "none"})  # the selection wins
    assert reply_length not in off.scenarios[0].metrics and off.board_version == plan_board(
        load_board(board), load_deployments()).board_version
    on = plan_board(load_board(board), load_deployments(), board_wide={reply_length: "on"})
    assert on.board_version == plan.board_version and on.scenarios[0].metrics == plan.scenarios[0].metrics
    with pytest.raises(BoardError, match="reads no scorer"):
        plan_board(top, load_deployments(), board_wide={reply_length: "offline/echo"})
    with pytest.raises(BoardError, match="'nothing' is not a board-wide metric"):
        plan_board(top, load_deployments(), board_wide={"nothing": "on"})


PLUGIN = '''
from helmflow.metrics import BoardWide, HookColumn, metric

metric("reply_length", version="1", board_wide=BoardWide(methods=("chat",), group="length",
       columns=(HookColumn("reply_chars", "characters per reply"),)))(lambda x: {"reply_chars": 1.0})
'''


def test_the_cli_turns_a_plugins_board_wide_metric_on_and_refuses_a_bad_value(tmp_path):
    from tests.support.cli import run_cli

    plugin = tmp_path / "reply_length.py"
    plugin.write_text(PLUGIN)
    board = tmp_path / "b.yaml"
    board.write_text("name: b\nversion: '1'\nmodels: [offline/echo]\nmax_instances: 2\n"
                     "scenarios: [{name: dyck_language, params: {num_parenthesis_pairs: 2}, adapter: {method: chat}}]\n")
    bad = run_cli("--plugin", str(plugin), "show", str(board), "--board-wide", "reply_length=offline/echo")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0, bad.stderr
    assert "board-wide metric 'reply_length' reads no scorer" in bad.stderr
    unknown = run_cli("--plugin", str(plugin), "show", str(board), "--board-wide", "dyck=on")
    assert unknown.returncode == 2 and "'dyck' is not a board-wide metric; board-wide metrics: " in unknown.stderr
    assert "reply_length" in unknown.stderr
