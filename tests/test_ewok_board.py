"""The HELM EWoK board: the gated Hub dataset's rows (a Parquet file we wrote in its schema) become one instance
per target with ids counted before the domain filter; without HF_TOKEN the plan stops with the Hub's terms
line; and `helmflow run ewok` end to end through the CLI against the local (gated) Hub on a real Prefect server."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.plan.compile import BoardError, plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.scenarios import get_scenario
from helmflow.scenarios.ewok import PATH, REPO, REVISION
from tests.support.cli import run_cli
from tests.support.hub_server import HubServer

ROWS = [("agent-properties", "Ann is tall.", "Ann is short.", "Ann reaches the shelf.", "Ann needs a stool."),
        ("social-relations", "Bo is Cy's boss.", "Cy is Bo's boss.", "Bo gives Cy a task.", "Cy gives Bo a task."),
        ("agent-properties", "Di is awake.", "Di is asleep.", "Di reads a book.", "Di snores.")]  # fmt: skip


def ewok_parquet(rows=ROWS) -> bytes:
    columns = ("Domain", "Context1", "Context2", "Target1", "Target2")
    table = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)}
                     | {"ConceptA": ["tall"] * len(rows), "TargetDiff": ["x"] * len(rows)})
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_each_row_gives_an_instance_per_target_with_ids_counted_before_the_domain_filter(tmp_path):
    (tmp_path / "test.parquet").write_bytes(ewok_parquet())
    files = {"test.parquet": str(tmp_path / "test.parquet")}
    everything = get_scenario("ewok").load(files)
    assert [(i.id, i.split, i.input.text) for i in everything][:2] == [
        ("id0", "test", "Ann reaches the shelf."), ("id1", "test", "Ann needs a stool.")]
    assert [[r.correct for r in i.references] for i in everything[:2]] == [[True, False], [False, True]]
    assert [i.split for i in everything] == ["test"] * 6 + ["train"] * 2
    agents = get_scenario("ewok", {"domain": "agent_properties"}).load(files)
    assert [i.id for i in agents] == ["id0", "id1", "id4", "id5", "id6", "id7"]  # row 2's ids are skipped
    assert [i.references[0].text for i in agents if i.split == "test"] == ["Ann is tall."] * 2 + ["Di is awake."] * 2


def test_the_gated_hub_dataset_without_a_token_stops_the_plan_with_the_terms_line(tmp_path, monkeypatch):
    for var in ("HF_TOKEN", "HELMFLOW_MIRROR", "HELMFLOW_MIRROR_EWOK"):
        monkeypatch.delenv(var, raising=False)
    with HubServer(tmp_path / "hub", gated={REPO: "hf_ok"}) as hub:
        hub.add_file(REPO, REVISION, PATH, ewok_parquet())
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(BoardError) as err:
            plan_scenario(ScenarioEntry(name="ewok"), None)
        assert "is in a gated Hugging Face repository and HF_TOKEN is not set" in str(err.value)
        assert "accept the dataset's terms on its Hub page" in str(err.value)
        monkeypatch.setenv("HF_TOKEN", "hf_ok")
        assert plan_scenario(ScenarioEntry(name="ewok"), None).checksums["test.parquet"]


def test_reproduce_ewok_explains_the_runs_and_the_wording():
    out = run_cli("reproduce", "ewok", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "HELM's eleven run entries, one per domain" in text and "two in-context examples are helmflow's own" in text


@pytest.mark.slow
def test_helmflow_run_ewok_end_to_end_against_the_gated_hub(tmp_path, prefect_server):
    storage = tmp_path / "store"
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": f"offline/says-{n}", "client": "offline", "model": f"says-{n}",
         "options": {"behavior": "constant", "answer": n}} for n in ("1", "2")]}))
    with HubServer(tmp_path / "hub", gated={REPO: "hf_ok"}) as hub:
        hub.add_file(REPO, REVISION, PATH, ewok_parquet())
        out = run_cli("run", "ewok", "--scenarios", "agent_properties,social_relations", "--models",
                      "offline/says-1,offline/says-2", "--models-file", str(models), "--storage", str(storage),
                      env={"HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_ok", "HELMFLOW_MIRROR": ""}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/ewok/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    # every row's first target fits context 1, its second context 2: a constant number is right half the time
    for name in ("offline/says-1", "offline/says-2"):
        assert rows[name]["agent_properties"] == rows[name]["social_relations"] == 0.5
        assert rows[name]["mean_win_rate"] == 0.5
    runs = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
    social = next(r for r in runs if r["scenario"]["label"] == "social_relations")
    prompts = pq.read_table(storage / "runs" / social["run_id"] / "requests.parquet")["prompt"].to_pylist()
    assert len(prompts) == 2  # row 1's two targets
    assert '## Scenario\n"Bo gives Cy a task."\n\n## Contexts\n1. "Bo is Cy\'s boss."\n2. "Cy is Bo\'s boss."\n' in prompts[0]
    assert prompts[0].rstrip().endswith("## Response")
