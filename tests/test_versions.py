"""The five hashes move exactly when the inputs they are defined over move."""

from __future__ import annotations

import subprocess
import sys

import pytest

from helmflow import versions
from helmflow.clients import load_deployments
from helmflow.metrics import METRICS, Metric
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import load_board


@pytest.fixture
def plan():
    return plan_board(load_board("demo"), load_deployments(), max_instances=5)


def _hashes(p):
    r = p.runs[0]
    return {
        "scenario": r.scenario.scenario_version,
        "prompt": r.scenario.prompt_version,
        "model": r.model_version,
        "metric": r.metric_version,
        "query": r.query_key,
        "run": r.run_id,
    }


def _changed(a, b):
    return {k for k in a if a[k] != b[k]}


def test_scenario_parameter_moves_scenario_query_and_run(plan):
    spec = load_board("demo")
    spec.scenarios[0].params["digits"] = 4
    other = plan_board(spec, load_deployments(), max_instances=5)
    assert _changed(_hashes(plan), _hashes(other)) == {"scenario", "query", "run"}


def test_generation_parameter_and_eval_sample_move_prompt_version(plan):
    spec = load_board("demo")
    spec.scenarios[0].adapter["max_tokens"] = 9
    assert _changed(_hashes(plan), _hashes(plan_board(spec, load_deployments(), max_instances=5))) == {"prompt", "query", "run"}
    more = plan_board(load_board("demo"), load_deployments(), max_instances=6)
    assert _changed(_hashes(plan), _hashes(more)) == {"prompt", "query", "run"}


def test_model_fields_move_model_version_only_for_declared_fields():
    d = load_deployments()["offline/solver"]
    base = versions.model_version(d)
    assert versions.model_version(d.model_copy(update={"revision": "2"})) != base
    assert versions.model_version(d.model_copy(update={"tokenizer": "hf:x"})) != base
    assert versions.model_version(d.model_copy(update={"context_window": 4096})) != base
    # prices, limits and options (e.g. fail:) are not part of what the model computes
    assert versions.model_version(d.model_copy(update={"price_input_per_mtok": 3.0, "options": {"fail": "always"}})) == base


def test_metric_version_bump_moves_metric_and_run_not_query(plan, monkeypatch):
    em = METRICS.get("exact_match")
    monkeypatch.setitem(METRICS._items, "exact_match", Metric(name=em.name, fn=em.fn, version=em.version + ".bumped"))
    bumped = plan_board(load_board("demo"), load_deployments(), max_instances=5)
    assert _changed(_hashes(plan), _hashes(bumped)) == {"metric", "run"}
    assert plan.runs[0].score_key != bumped.runs[0].score_key


@pytest.mark.slow
def test_hashes_are_equal_across_processes(plan):
    code = (
        "from helmflow.plan.compile import plan_board;"
        "from helmflow.plan.spec import load_board;"
        "from helmflow.clients import load_deployments;"
        "p = plan_board(load_board('demo'), load_deployments(), max_instances=5);"
        "print(' '.join(r.run_id for r in p.runs))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONHASHSEED": "123", "PATH": "/usr/bin:/bin"})
    assert out.stdout.split() == [r.run_id for r in plan.runs]


def test_release_hash_ignores_run_order():
    assert versions.release_hash("b", ["2", "1"]) == versions.release_hash("b", ["1", "2"])
    assert versions.release_hash("b", ["1"]) != versions.release_hash("b", ["1", "2"])


def test_output_budget_larger_than_window_is_a_plan_error():
    from helmflow.plan.spec import BoardError

    deps = load_deployments()
    deps["offline/solver"] = deps["offline/solver"].model_copy(update={"context_window": 64})
    spec = load_board("demo")
    spec.scenarios[0].adapter["max_tokens"] = 64
    with pytest.raises(BoardError, match="leaves no room for a prompt"):
        plan_board(spec, deps, models=["offline/solver"], max_instances=5)


def test_unknown_tokenizer_kind_is_a_plan_error():
    from helmflow.plan.spec import BoardError

    deps = load_deployments()
    deps["offline/solver"] = deps["offline/solver"].model_copy(update={"tokenizer": "sentencepiece:x"})
    with pytest.raises(BoardError, match="unknown tokenizer 'sentencepiece:x'"):
        plan_board(load_board("demo"), deps, models=["offline/solver"], max_instances=5)
