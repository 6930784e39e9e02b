"""``helmflow export --format every-eval-ever``: a demo release through the real command, each file checked
against the vendored Every Eval Ever 0.2.2 schema by jsonschema and its numbers against the release's own."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import pytest

from helmflow.storage import Store
from tests.support.cli import REPO, run_cli
from tests.support.demo import build_demo

SCHEMA = REPO / "helmflow" / "helm" / "data" / "every_eval_ever" / "eval.schema.json"


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> tuple[Store, str]:
    return build_demo(str(tmp_path_factory.mktemp("eee") / "store"), max_instances=4)


def _export(store: Store, out: Path, *extra: str):
    return run_cli("export", "demo", "--storage", store.root, "--to", str(out), "--format", "every-eval-ever",
                   "--organization", "Acme Evals", *extra)


def test_every_model_file_validates_and_carries_the_releases_numbers(demo, tmp_path: Path):
    store, release = demo
    res = _export(store, tmp_path / "eee")
    assert res.returncode == 0, res.stderr
    assert "3 model file(s)" in res.stdout
    files = sorted((tmp_path / "eee" / "data" / "demo").glob("*/*/*.json"))
    assert [f.parent.relative_to(tmp_path / "eee" / "data" / "demo").as_posix() for f in files] == [
        "offline/echo", "offline/solver", "offline/solver-noisy"]
    schema = json.loads(SCHEMA.read_text())
    assert schema["version"] == "0.2.2" and schema["$schema"].startswith("http://json-schema.org/draft-07")
    validator = jsonschema.Draft7Validator(schema)
    runs = {(r["deployment"], r["scenario"]): r
            for r in store.read_parquet(f"leaderboards/demo/{release}/runs.parquet").to_pylist()}
    board = {r["deployment"]: r for r in store.read_parquet(f"leaderboards/demo/{release}/leaderboard.parquet")
             .to_pylist()}
    for f in files:
        record = json.loads(f.read_text())
        assert list(validator.iter_errors(record)) == []
        model = record["model_info"]["name"]
        assert record["source_metadata"]["source_organization_name"] == "Acme Evals"
        assert record["eval_library"]["name"] == "helmflow"
        assert record["eval_library"]["additional_details"]["release_id"] == release
        results = {r["evaluation_result_id"]: r for r in record["evaluation_results"]}
        for scenario in ("arithmetic-3", "arithmetic-5x-chat"):
            run = runs[(model, scenario)]
            main = results[f"{scenario}/exact_match/test"]
            assert main["score_details"]["details"]["main_metric"] == "true"
            assert main["score_details"]["details"]["run_id"] == run["run_id"]
            assert main["score_details"]["score"] == run["score"]
            ci = main["score_details"]["uncertainty"]["confidence_interval"]
            assert (ci["lower"], ci["upper"], ci["confidence_level"]) == (run["ci_low"], run["ci_high"], 0.95)
            assert main["score_details"]["uncertainty"]["num_samples"] == 4
            assert main["metric_config"]["score_type"] == "continuous"
            assert (main["metric_config"]["min_score"], main["metric_config"]["max_score"]) == (0.0, 1.0)
            latency = results[f"{scenario}/latency_s/test"]["metric_config"]
            assert latency["lower_is_better"] is True and latency["min_score"] == 0.0
        win = results["demo/mean_win_rate"]["score_details"]["score"]
        assert math.isclose(win, board[model]["mean_win_rate"])
        robust = results["demo/arithmetic-3/robustness"]["score_details"]
        assert robust["score"] == board[model]["arithmetic-3/robustness"]
        assert robust["uncertainty"]["confidence_interval"]["lower"] == board[model]["arithmetic-3/robustness ci_low"]
    solver = json.loads(next(f for f in files if f.parent.name == "solver").read_text())
    assert solver["evaluation_id"].startswith("demo/offline/solver/")
    assert float(solver["retrieved_timestamp"]) > 0

    # the same release exports to the same bytes (file names are uuid5 of board, release and model)
    again = _export(store, tmp_path / "again")
    assert again.returncode == 0, again.stderr
    assert [(f.name, f.read_bytes()) for f in files] == [
        (f.name, f.read_bytes()) for f in sorted((tmp_path / "again" / "data" / "demo").glob("*/*/*.json"))]


def test_bad_relationship_is_one_line_and_writes_nothing(demo, tmp_path: Path):
    store, _ = demo
    res = _export(store, tmp_path / "eee", "--relationship", "friends")
    assert res.returncode == 2 and "invalid choice" in res.stderr
    assert not (tmp_path / "eee").exists()


def test_a_record_breaking_the_schema_is_refused_naming_where(demo):
    from helmflow.errors import HelmflowError
    from helmflow.helm.every_eval_ever import validate

    with pytest.raises(HelmflowError, match=r"schema 0\.2\.2 at source_metadata/evaluator_relationship"):
        validate({"schema_version": "0.2.2", "evaluation_id": "x", "retrieved_timestamp": "1",
                  "source_metadata": {"source_type": "evaluation_run", "source_organization_name": "a",
                                      "evaluator_relationship": "friends"},
                  "model_info": {"name": "m", "id": "m"}, "eval_library": {"name": "helmflow", "version": "0"},
                  "evaluation_results": []})
