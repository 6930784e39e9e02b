"""One count of a board's runs, with one meaning, in every command that states it."""

from __future__ import annotations

from helmflow.terminal import count_line
from tests.support.cli import run_cli


def test_singulars_and_plurals():
    assert count_line("b", 1, 1, 1, 2, 0) == "board b: 1 scenario + 1 perturbed copy x 1 model = 2 runs"
    assert count_line("b", 2, 0, 3, 6, 0) == "board b: 2 scenarios x 3 models = 6 runs"
    assert count_line("b", 1, 0, 1, 1, None) == "board b: 1 scenario x 1 model = 1 run"


def test_a_count_before_the_data_is_read_says_it_is_an_upper_bound():
    before = count_line("demo", 8, 6, 4, 56, None)
    assert before.startswith("board demo: 8 scenarios + 6 perturbed copies x 4 models = 56 runs (at most")
    after = count_line("demo", 8, 2, 4, 40, 4)
    assert after == ("board demo: 8 scenarios + 2 perturbed copies (4 more left out: they change no sampled "
                     "instance) x 4 models = 40 runs")


def test_show_counts_the_planned_runs_as_run_does(tmp_path):
    from helmflow.plan.compile import prepare

    plan = prepare("demo", models=["offline/solver", "offline/echo"])
    out = run_cli("show", "demo", "--models", "offline/solver,offline/echo", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("board demo:"))
    assert line.startswith(f"board demo: {len(plan.scenarios)} scenarios + {len(plan.perturbed)} perturbed copies "
                           f"x 2 models = {len(plan.runs)} runs (at most"), line
    assert len(plan.runs) == 2 * (len(plan.scenarios) + len(plan.perturbed))
