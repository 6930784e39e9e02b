"""``helmflow import-inspect``: logs written by Inspect AI itself (a tiny task, its mockllm model answering
from a table), read back through the real command; the imported board's numbers are Inspect's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from helmflow.storage import Store
from tests.support.cli import run_cli

QUESTIONS = {"What is 2+2?": "4", "What is 3+3?": "6", "Capital of France?": "Paris", "Colour of the sky?": "blue"}
# the solver gets 2+2 and 3+3 exactly, names Paris in a sentence and misses the sky; the guesser always says 4
ANSWERS = {
    "mockllm/solver": {"What is 2+2?": "4", "What is 3+3?": "6", "Capital of France?": "It is Paris",
                       "Colour of the sky?": "green"},
    "mockllm/guesser": dict.fromkeys(QUESTIONS, "4"),
}
# worked by hand: exact (Inspect's normalised exact match), includes (target in output, casefolded)
EXPECTED = {"mockllm/solver": {"exact": 2 / 4, "includes": 3 / 4}, "mockllm/guesser": {"exact": 1 / 4, "includes": 1 / 4}}


def _model(name: str):
    from inspect_ai.model import ModelOutput, ModelUsage, get_model

    def answer(messages, tools, tool_choice, config):
        text = ANSWERS[name][messages[-1].text]
        out = ModelOutput.from_content(name, text)
        out.usage = ModelUsage(input_tokens=len(messages[-1].text.split()), output_tokens=len(text.split()),
                               total_tokens=len(messages[-1].text.split()) + len(text.split()))
        return out

    return get_model(name, custom_outputs=answer)


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[Path, dict]:
    """Two Inspect logs (.eval) of the task over two mockllm models, two epochs each; and one as .json."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.log import write_eval_log
    from inspect_ai.scorer import exact, includes
    from inspect_ai.solver import generate

    root = tmp_path_factory.mktemp("inspect")
    task = Task(dataset=[Sample(input=q, target=t, id=f"q{i}") for i, (q, t) in enumerate(QUESTIONS.items(), 1)],
                solver=[generate()], scorer=[exact(), includes()], name="tiny_qa", version=3, epochs=2)
    done = eval(task, model=[_model(m) for m in ANSWERS], log_dir=str(root / "logs"), display="none",
                ctl_server=False)
    assert [log.status for log in done] == ["success", "success"]
    inspect_numbers = {log.eval.model: {s.name: next(iter(s.metrics.values())).value for s in log.results.scores}
                       for log in done}
    # a folder with the solver's log as .json (written by Inspect's writer) and the guesser's .eval
    (root / "mixed").mkdir()
    for log in done:
        if log.eval.model == "mockllm/solver":
            write_eval_log(log, str(root / "mixed" / "solver.json"), format="json")
        else:
            Path(log.location).rename(root / "mixed" / "guesser.eval")
    return root, inspect_numbers


@pytest.mark.slow
def test_imported_board_has_inspects_numbers(logs, tmp_path: Path):
    root, inspect_numbers = logs
    assert inspect_numbers == EXPECTED  # Inspect's own results, as worked by hand
    store = str(tmp_path / "store")
    res = run_cli("import-inspect", str(root / "mixed"), "--board", "inspect-tiny", "--storage", store, "-v")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 log(s) imported" in res.stdout and "MISMATCH" not in res.stdout
    assert res.stdout.count("3/3 of Inspect's numbers reproduced") == 2, res.stdout
    assert "MATCH exact:mean as quasi_exact_match: Inspect 0.5, helmflow 0.5" in res.stdout

    s = Store(store)
    pointer = s.read_json("leaderboards/inspect-tiny/latest.json")
    board = {r["deployment"]: r for r in
             s.read_parquet(f"leaderboards/inspect-tiny/{pointer['release_id']}/leaderboard.parquet").to_pylist()}
    assert {m: board[m]["tiny_qa"] for m in board} == {m: EXPECTED[m]["exact"] for m in EXPECTED}
    assert board["mockllm/solver"]["tiny_qa ci_low"] <= 0.5 <= board["mockllm/solver"]["tiny_qa ci_high"]
    release = s.read_json(f"leaderboards/inspect-tiny/{pointer['release_id']}/release.json")
    assert release["board_version"] == "imported-inspect" and release["imported_from"] == [str(root / "mixed")]
    for rid in release["run_ids"]:
        run = s.read_json(f"runs/{rid}/run.json")
        model = run["deployment"]["name"]
        assert run["deployment"]["client"] == "inspect" and run["imported"]["format"] == "inspect"
        assert all(v.startswith("imported-inspect-") for k, v in run["versions"].items() if k != "run_id")
        assert run["imported"]["run_spec"]["task_version"] == 3
        assert run["imported"]["run_spec"]["packages"]["inspect_ai"]
        assert run["main_metric"] == "exact" and run["instances"] == 4
        summary = {r["name"]: r for r in s.read_parquet(f"runs/{rid}/summary.parquet").to_pylist()}
        for scorer, value in EXPECTED[model].items():
            assert summary[scorer]["mean"] == value and summary[scorer]["count"] == 4
        assert summary["quasi_exact_match"]["mean"] == EXPECTED[model]["exact"]
        assert summary["includes:accuracy"]["mean"] == EXPECTED[model]["includes"]
        completions = s.read_parquet(f"runs/{rid}/completions.parquet").to_pylist()
        assert len(completions) == 8 and {c["sample_index"] for c in completions} == {0, 1}
        assert sorted({c["text"] for c in completions}) == sorted(set(ANSWERS[model].values()))

    # importing the same logs again writes nothing new: same runs, same release
    from helmflow.helm.inspect_logs import import_logs

    again = import_logs(s, str(root / "mixed"), "inspect-tiny")
    assert [r.wrote for r in again.runs] == [False, False] and again.release_id == pointer["release_id"]


@pytest.mark.slow
def test_bad_sources_are_one_line_or_skipped(logs, tmp_path: Path):
    root, _ = logs
    store = str(tmp_path / "s")
    missing = run_cli("import-inspect", str(tmp_path / "nowhere"), "--storage", store)
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0 and "no such file" in missing.stderr
    board = run_cli("import-inspect", str(root / "mixed"), "--board", "demo", "--storage", store)
    assert board.returncode == 2 and "--board inspect-demo" in board.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "cut.eval").write_bytes((root / "mixed" / "guesser.eval").read_bytes()[:300])
    (broken / "other.json").write_text(json.dumps({"not": "a log"}))
    from helmflow.helm.inspect_logs import import_logs

    report = import_logs(Store(store), str(broken))
    assert not report.ok and report.runs == []
    why = {s.where: s.why for s in report.skipped}
    assert why["cut.eval"].startswith("Inspect could not read it") and "other.json" in why
    assert not (tmp_path / "s" / "runs").exists()
