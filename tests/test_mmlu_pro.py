"""MMLU-Pro: HELM's instance order, ids and references; HELM's evaluation sample; a run through the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.pipeline import adapt_scenario, download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.records import prompt_from_row
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.storage import Store
from tests.support.capabilities_fixtures import mmlu_pro_files

REV = "3373e0b32277875b8db2aa555a333b78a08477ea"


@pytest.fixture
def mirror(tmp_path, monkeypatch):
    files = mmlu_pro_files(n_test=1500)
    folder = tmp_path / "mirror"
    folder.mkdir()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    monkeypatch.setenv("HELMFLOW_MIRROR_MMLU_PRO", str(folder))
    return folder


def helm_order(folder: Path) -> list[tuple[str, str]]:
    """(id, split) in HELM's MMLUProScenario order, read straight from the files."""
    out = []
    for name, split in (("validation.parquet", "train"), ("test.parquet", "test")):
        for row in pq.read_table(folder / name).to_pylist():
            out.append((f"id{row['question_id']}", split))
    return out


def test_instances_in_helm_order_with_helm_references(mirror):
    scen = get_scenario("mmlu_pro")
    instances = scen.load({n: str(mirror / n) for n in ("validation.parquet", "test.parquet")})
    assert [(i.id, i.split) for i in instances] == helm_order(mirror)
    assert sum(i.split == "train" for i in instances) == 70
    rows = {f"id{r['question_id']}": r for r in pq.read_table(mirror / "test.parquet").to_pylist()}
    for inst in instances[70:120]:
        row = rows[inst.id]
        assert [r.text for r in inst.references] == row["options"]
        assert [k for k, r in enumerate(inst.references) if r.correct] == [row["answer_index"]]
        assert inst.input.text == row["question"]


def test_subject_filter(mirror):
    scen = get_scenario("mmlu_pro", {"subject": "computer_science"})
    instances = scen.load({n: str(mirror / n) for n in ("validation.parquet", "test.parquet")})
    assert instances and all(i.extra["category"] == "computer science" for i in instances)
    with pytest.raises(ScenarioError, match="no question has category 'astrology'"):
        get_scenario("mmlu_pro", {"subject": "astrology"}).load({n: str(mirror / n) for n in ("validation.parquet", "test.parquet")})


def test_evaluation_sample_equals_helms_numpy_rule(mirror, tmp_path):
    """1,500 test rows, 1,000 drawn: the ids equal HELM's np.random.seed(0); np.random.choice(...)."""
    plan = plan_scenario(ScenarioEntry(name="mmlu_pro"), 1000)
    store = Store(str(tmp_path / "store"))
    prompt_set = adapt_scenario(store, plan, download_scenario(store, plan))
    ours = [prompt_from_row(r).instance_id for r in store.read_parquet(prompt_set.prompts_key).to_pylist()]

    # HELM's runner.downsample_eval_instances, re-implemented independently over HELM's order
    eval_ids = [i for i, split in helm_order(mirror) if split in ("valid", "test")]
    np.random.seed(0)
    helm = list(np.random.choice(np.array(eval_ids, dtype=object), 1000, replace=False))
    assert ours == helm
    assert len(set(ours)) == 1000

    # monotone: a smaller sample is a prefix of the larger one
    small = plan_scenario(ScenarioEntry(name="mmlu_pro"), 100)
    small_set = adapt_scenario(store, small, download_scenario(store, small))
    assert [r["instance_id"] for r in store.read_parquet(small_set.prompts_key).to_pylist()] == ours[:100]


def test_variant_is_part_of_the_versions(mirror):
    v1 = plan_scenario(ScenarioEntry(name="mmlu_pro"), None)
    v2 = plan_scenario(ScenarioEntry(name="mmlu_pro", params={"variant": "v2"}), None)
    assert v2.adapter.generation.max_tokens == v1.adapter.generation.max_tokens + 10_000
    assert v1.prompt_version != v2.prompt_version
    greedy = plan_scenario(ScenarioEntry(name="mmlu_pro", adapter={"temperature": 0}), None)
    assert (v1.adapter.generation.temperature, greedy.adapter.generation.temperature) == (1.0, 0.0)
    assert greedy.prompt_version != v1.prompt_version


@pytest.mark.slow
def test_board_run_through_cli_scores_like_helm(mirror, tmp_path, cli, prefect_server):
    """`helmflow run --board-file` on the fixture: an offline model that always answers (A)."""
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "mmlu-fixture", "version": "1", "models": ["fixture/always-a"], "max_instances": 60,
        "scenarios": [{"name": "mmlu_pro", "label": "mmlu_pro", "adapter": {"temperature": 0}}],
    }))
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [{
        "name": "fixture/always-a", "client": "offline", "model": "always-a",
        "options": {"behavior": "constant", "answer": "Let me think. The correct answer is (A)."},
    }]}))
    storage = tmp_path / "store"
    out = cli("run", "--board-file", str(board), "--models-file", str(models), "--storage", str(storage),
              env={"HELMFLOW_MIRROR_MMLU_PRO": str(mirror)})
    assert out.returncode == 0, out.stdout + out.stderr
    (run_json,) = list(storage.glob("runs/*/run.json"))
    run = json.loads(run_json.read_text())
    assert run["main_metric"] == "chain_of_thought_correctness"
    assert run["dataset"]["revision"] == REV
    # expected: the share of HELM's 60 sampled questions whose key is A
    eval_ids = [i for i, split in helm_order(mirror) if split == "test"]
    np.random.seed(0)
    picked = set(np.random.choice(np.array(eval_ids, dtype=object), 60, replace=False))
    keys = {f"id{r['question_id']}": r["answer"] for r in pq.read_table(mirror / "test.parquet").to_pylist()}
    assert run["score"] == pytest.approx(sum(keys[i] == "A" for i in picked) / 60)
    requests = pq.read_table(io.BytesIO((run_json.parent / "requests.parquet").read_bytes())).to_pylist()
    assert {r["instance_id"] for r in requests} == picked
    assert all("Choices:\nA. " in r["prompt"] and r["prompt"].endswith('"The correct answer is (insert answer here)".')
               for r in requests)


@pytest.mark.slow
def test_eval_command_runs_mmlu_pro_v2(mirror, tmp_path, cli, prefect_server):
    """`helmflow eval mmlu_pro:variant=v2`: HELM v2's token budget and format suffix, HELM's sample."""
    from helmflow.scenarios.helm_cot import V2_FORMAT_SUFFIX

    storage = tmp_path / "store"
    models = tmp_path / "models.yaml"  # a window that holds v2's 14,096-token budget, as real models' do
    models.write_text(yaml.safe_dump({"deployments": [{
        "name": "fixture/first-option-32k", "client": "offline", "model": "first-option", "context_window": 32768,
        "options": {"behavior": "first_option"},
    }]}))
    out = cli("eval", "mmlu_pro:variant=v2", "--models", "fixture/first-option-32k", "--models-file", str(models),
              "--max-instances", "30", "--storage", str(storage), env={"HELMFLOW_MIRROR_MMLU_PRO": str(mirror)})
    assert out.returncode == 0, out.stdout + out.stderr
    (run_json,) = list(storage.glob("runs/*/run.json"))
    run = json.loads(run_json.read_text())
    assert run["scenario"]["params"] == {"subject": "all", "variant": "v2"}
    requests = pq.read_table(io.BytesIO((run_json.parent / "requests.parquet").read_bytes())).to_pylist()
    bodies = [json.loads(r["body_json"]) for r in requests]
    assert {b["max_tokens"] for b in bodies} == {14096}
    assert not any(r["prompt_truncated"] for r in requests)
    assert all(r["prompt"].endswith(V2_FORMAT_SUFFIX) for r in requests)
    eval_ids = [i for i, split in helm_order(mirror) if split == "test"]
    np.random.seed(0)
    picked = list(np.random.choice(np.array(eval_ids, dtype=object), 30, replace=False))
    assert [r["instance_id"] for r in requests] == picked
    keys = {f"id{r['question_id']}": r["answer"] for r in pq.read_table(mirror / "test.parquet").to_pylist()}
    assert run["score"] == pytest.approx(sum(keys[i] == "A" for i in picked) / 30)


@pytest.mark.parametrize(("variant", "max_tokens"), [("v1", 4096), ("v2", 14096)])
@pytest.mark.slow
def test_run_variant_flag_sets_the_variant_on_the_board(mirror, tmp_path, cli, variant, max_tokens):
    """`helmflow run capabilities --variant v2`: the variant reaches MMLU-Pro's adapter (seen in a dry run)."""
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [{
        "name": "fixture/first-option-32k", "client": "offline", "model": "first-option", "context_window": 32768,
        "options": {"behavior": "first_option"},
    }]}))
    out = cli("run", "capabilities", "--scenarios", "mmlu_pro", "--variant", variant, "--dry-run", "--max-instances", "3",
              "--models", "fixture/first-option-32k", "--models-file", str(models), "--storage", str(tmp_path / "s"),
              env={"HELMFLOW_MIRROR_MMLU_PRO": str(mirror)})
    assert out.returncode == 0, out.stdout + out.stderr
    total = [line for line in out.stdout.splitlines() if line.strip("│ ").startswith("total")][0]
    assert str(3 * max_tokens) in total
