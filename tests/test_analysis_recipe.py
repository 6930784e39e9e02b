"""docs/analysis.md's recipe, run as written over a storage root of two real runs: every
per-run Parquet file carries run_id, model and scenario, and the gold answers are in the run folder."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pyarrow.parquet as pq

from helmflow import pipeline
from helmflow.plan.compile import prepare
from helmflow.storage import Store
from tests.support.cli import REPO

BOARD = textwrap.dedent("""
    name: two-runs
    version: "1"
    models: [offline/solver, offline/echo]
    max_instances: 5
    scenarios:
      - name: arithmetic
        params: {digits: 2, ops: "+"}
        label: add-2
""")


def recipe() -> str:
    text = (REPO / "docs" / "analysis.md").read_text()
    return re.search(r"<!-- recipe -->\n```python\n(.*?)```", text, re.S).group(1)


def test_the_analysis_recipe_reads_two_runs_as_one_table(tmp_path: Path, monkeypatch):
    board = tmp_path / "two-runs.yaml"
    board.write_text(BOARD)
    store = Store(str(tmp_path / "helmflow-store"))
    plan = prepare(board=str(board))
    scenario = plan.scenarios[0]
    data = pipeline.download_scenario(store, scenario)
    prompts = pipeline.adapt_scenario(store, scenario, data)
    runs = {}
    for r in plan.runs:
        q = pipeline.query_pair(store, r, prompts)
        runs[r.deployment.name] = pipeline.publish_run(store, r, q, pipeline.score_pair(store, r, data, q)).run_id

    for name in ("requests", "completions", "stats", "summary", "references"):  # the ids lead every file
        table = pq.read_table(tmp_path / "helmflow-store" / "runs" / runs["offline/echo"] / f"{name}.parquet")
        assert table.column_names[:3] == ["run_id", "model", "scenario"], name
        assert set(table["model"].to_pylist()) == {"offline/echo"} and set(table["scenario"].to_pylist()) == {"add-2"}
    (tmp_path / "helmflow-store" / "runs" / "half-published").mkdir()  # no run.json: not a run, not read

    monkeypatch.chdir(tmp_path)
    found: dict = {}
    exec(compile(recipe(), "docs/analysis.md", "exec"), found)  # noqa: S102 (our own documentation)

    scores = {(r["model"], r["scenario"]): r["value_mean"] for r in found["scores"].to_pylist()}
    assert scores == {("offline/solver", "add-2"): 1.0, ("offline/echo", "add-2"): 0.0}
    answers = found["answers"].to_pylist()
    assert len(answers) == 10 and {a["run_id"] for a in answers} == set(runs.values())
    solver = [a for a in answers if a["model"] == "offline/solver"]
    assert len(solver) == 5 and all(a["text"].strip() == a["gold"] for a in solver), solver
    # the gold answers are the instances' correct references, for exactly the instances the run asked
    asked = set(pq.read_table(tmp_path / "helmflow-store" / "runs" / runs["offline/solver"] / "requests.parquet")
                ["instance_id"].to_pylist())
    assert {a["instance_id"] for a in solver} == asked


def test_the_recipe_reads_runs_stored_before_a_column_was_added(tmp_path: Path, monkeypatch):
    """A store holding runs of several helmflow versions: the older files lack the columns added since."""
    import pyarrow as pa

    for i, reasoning in enumerate((None, "thought about it")):  # the first sorted run is the older one
        run = tmp_path / "helmflow-store" / "runs" / f"run{i}"
        run.mkdir(parents=True)
        (run / "run.json").write_text("{}")
        row = {"run_id": f"run{i}", "model": "m", "scenario": "s", "instance_id": "a", "text": "42"}
        if reasoning is not None:
            row["reasoning"] = reasoning
        pq.write_table(pa.Table.from_pylist([row]), run / "completions.parquet")
    monkeypatch.chdir(tmp_path)
    found: dict = {}
    code = recipe().split("\nstats, completions")[0] + "\ncompletions = runs_table('completions')\n"
    exec(compile(code, "docs/analysis.md", "exec"), found)  # noqa: S102 (our own documentation)
    assert found["completions"].sort_by("run_id")["reasoning"].to_pylist() == [None, "thought about it"]
