"""run.json, release.json and latest.json through their models: the published JSON Schemas are
current, real files validate against them, and the models read older and newer files."""

from __future__ import annotations

import json

import jsonschema
import pytest

from helmflow import layout
from helmflow.manifests import SCHEMA_DIR, SCHEMAS, LatestPointer, ReleaseManifest, RunManifest, schema_text


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_the_json_schemas_in_docs_are_current(name):
    """Regenerate with ``python -m helmflow.manifests`` after changing a model."""
    assert (SCHEMA_DIR / f"{name}.schema.json").read_text() == schema_text(name)


def _published(tmp_path):
    from helmflow.aggregate import point_release, publish_release
    from helmflow.pipeline import adapt_scenario, download_scenario, publish_run, query_pair, score_pair
    from helmflow.plan.compile import prepare
    from helmflow.storage import Store

    store = Store(str(tmp_path / "store"))
    plan = prepare("demo", models=["offline/solver"], scenarios=["arithmetic-3"], max_instances=5)
    outcomes = []
    for run in plan.runs:
        data = download_scenario(store, run.scenario)
        prompts = adapt_scenario(store, run.scenario, data)
        queried = query_pair(store, run, prompts)
        scored = score_pair(store, run, data, queried)
        outcomes.append(publish_run(store, run, queried, scored))
    release = point_release(store, plan, publish_release(store, plan, outcomes, []))
    return store, plan, release


def test_published_files_validate_against_the_schemas_and_read_back_through_the_models(tmp_path):
    store, plan, release = _published(tmp_path)
    run_json = store.read_json(layout.run_json(plan.runs[0].run_id))
    release_json = store.read_json(layout.release_json("demo", release.release_id))
    latest_json = store.read_json(layout.latest("demo", subset=True))  # one model, one scenario: a subset
    for name, data in (("run", run_json), ("release", release_json), ("latest", latest_json)):
        jsonschema.validate(data, json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text()))
    assert RunManifest.model_validate(run_json).versions.run_id == plan.runs[0].run_id
    assert ReleaseManifest.model_validate(release_json).run_ids == sorted(p.run_id for p in plan.runs)  # + perturbed copies
    assert LatestPointer.model_validate(latest_json).release_id == release.release_id


def test_models_keep_fields_they_do_not_know_and_default_the_ones_older_files_lack():
    pointer = {"release_id": "2026-01-01-abcd1234", "uri": "file:///x", "status": "complete", "created_at": "t",
               "sha256": {"leaderboard.parquet": "00"}}  # a field a newer helmflow may add
    assert LatestPointer.model_validate(pointer).to_json() == {**pointer, "subset": False, "selection": {}}
    old_release = {"board": "b", "board_version": "v", "release_id": "r", "created_at": "t", "helmflow_version": "0",
                   "status": "complete"}  # no judges, costs or failed cells yet
    release = ReleaseManifest.model_validate(old_release)
    assert release.judges == [] and release.failed == [] and release.cost_usd == 0.0
    with pytest.raises(ValueError, match="status"):
        LatestPointer.model_validate({**pointer, "status": "done"})


def test_manifests_written_with_a_metric_named_scorer_field_read_as_board_wide_entries():
    """run.json and release.json once spelled a board-wide metric's scorer ``<metric>_scorer``."""
    from helmflow.manifests import RunJudges

    scorer = {"name": "local/profanity-check", "client": "offline", "model": "m", "template": "t"}
    judges = RunJudges.model_validate({"toxicity_scorer": scorer, "sent": 3})
    assert judges.scorers["toxicity"].name == "local/profanity-check" and judges.sent == 3
    assert "toxicity_scorer" not in judges.to_json()
    assert RunJudges.model_validate({"toxicity_scorer": None}).scorers == {}
    old_release = {"board": "b", "board_version": "v", "release_id": "r", "created_at": "t", "helmflow_version": "0",
                   "status": "complete", "toxicity_scorer": "local/profanity-check"}
    assert ReleaseManifest.model_validate(old_release).board_wide == {"toxicity": "local/profanity-check"}
    assert ReleaseManifest.model_validate({**old_release, "toxicity_scorer": None}).board_wide == {}
