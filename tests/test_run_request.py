"""One typed request for run, eval and reproduce; the task runner is passed to the flow, never
through an environment variable read at import; a board is planned once per command."""

from __future__ import annotations

import argparse

import pytest

from helmflow.cli import build_parser
from helmflow.cli.options import UsageError
from helmflow.cli.runner import RunRequest, request_from, run_board
from helmflow.plan.selection import Selection


class _Started(Exception):
    pass


class _FakeFlow:
    """Stands in for the evaluate flow: records how it was configured and called, then stops the command."""

    def __init__(self):
        self.options: dict = {}
        self.params: dict = {}
        self.on_call = None

    def with_options(self, **options):
        self.options = options
        return self

    def __call__(self, **params):
        self.params = params
        if self.on_call:
            self.on_call(params)
        raise _Started


@pytest.fixture
def fake_flow(monkeypatch):
    import helmflow.flows.evaluate as evaluate_module  # imported first: its decorator already read the environment

    fake = _FakeFlow()
    monkeypatch.setattr(evaluate_module, "evaluate", fake)
    return fake


@pytest.mark.slow
def test_the_task_runner_option_reaches_the_flow_even_when_the_flow_module_was_imported_first(fake_flow, tmp_path,
                                                                                            monkeypatch):
    from prefect.task_runners import ThreadPoolTaskRunner

    monkeypatch.setenv("HELMFLOW_TASK_RUNNER", "dask")  # the CLI option wins over the environment
    with pytest.raises(_Started):
        run_board(RunRequest(board="demo", task_runner="thread", storage=str(tmp_path),
                             selection=Selection(max_instances=2)))
    assert isinstance(fake_flow.options["task_runner"], ThreadPoolTaskRunner)
    assert fake_flow.params["board"] == "demo" and fake_flow.params["selection"].max_instances == 2


@pytest.mark.slow
def test_run_plans_once_and_the_flow_takes_that_launch(fake_flow, tmp_path, monkeypatch):
    from helmflow.plan import compile as planner
    from helmflow.plan import launch as launcher

    calls = []
    real = planner.prepare
    monkeypatch.setattr(planner, "prepare", lambda *a, **k: calls.append(k) or real(*a, **k))
    taken = []
    fake_flow.on_call = lambda params: taken.append(launcher.launch_for(launcher.launch_key(  # the flow's first step
        params["board"], params["selection"], params["storage"], params["models_file"], params["plugins"])))
    with pytest.raises(_Started):
        run_board(RunRequest(board="demo", storage=str(tmp_path),
                             selection=Selection(max_instances=2, models=["offline/echo"])))
    assert len(calls) == 1
    (launch,) = taken
    assert launch is not None and launch.store.root == str(tmp_path)
    assert [r.deployment.name for r in launch.plan.runs] == ["offline/echo"] * len(launch.plan.all_scenarios)
    selection = fake_flow.params["selection"]
    # handed over for that call only: a flow started later in this process prepares for itself
    assert launcher.launch_for(launcher.launch_key("demo", selection, str(tmp_path), None, [])) is None
    # a flow started with another selection (another sample) is not handed this launch; the form's
    # JSON of the same selection is the same launch
    other = selection.model_copy(update={"max_instances": 3})
    assert launcher.launch_key("demo", other, str(tmp_path)) != launcher.launch_key("demo", selection, str(tmp_path))
    assert launcher.launch_key("demo", selection.key(), str(tmp_path)) == launcher.launch_key("demo", selection,
                                                                                                str(tmp_path))


def test_run_eval_and_reproduce_build_the_same_request_type():
    parser = build_parser()
    run = request_from(parser.parse_args(["run", "demo", "--models", "offline/echo", "--budget-usd", "1"]), board="demo")
    assert run == RunRequest(board="demo", selection=Selection(models=["offline/echo"]), budget_usd=1.0)
    from helmflow.cli.eval import board_spec

    args = parser.parse_args(["eval", "dyck_language", "--models", "offline/echo", "--max-instances", "3"])
    ev = request_from(args, board=board_spec(args), scenarios=None)
    assert ev.board["scenarios"][0]["name"] == "dyck_language" and ev.selection.max_instances == 3
    args = parser.parse_args(["reproduce", "capabilities", "--variant", "v2", "--no-judge"])
    rep = request_from(args, board={"name": "x"})
    assert rep.variant == "v2" and rep.selection.no_judge and rep.selection.max_instances is None
    args = parser.parse_args(["run", "safety", "--board-wide", "toxicity=none", "--judge", "a,b"])
    assert request_from(args, board="safety").selection == Selection(judges=["a", "b"], board_wide={"toxicity": "none"})


def test_judge_and_no_judge_exclude_each_other_before_any_planning(fake_flow):
    with pytest.raises(ValueError, match="exclude each other"):
        Selection(judges=["a"], no_judge=True)  # a flow parameter too: Prefect refuses it before the run
    with pytest.raises(UsageError, match="exclude each other"):
        request_from(build_parser().parse_args(["run", "demo", "--judge", "a", "--no-judge"]), board="demo")


def test_a_request_refuses_unknown_fields():
    with pytest.raises(ValueError, match="extra"):
        request_from(argparse.Namespace(plugin=[]), board="demo", board_file="x.yaml")
