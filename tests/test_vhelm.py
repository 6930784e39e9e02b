"""The VHELM board: its scenarios read fixture mirrors in each dataset's real schema (images
embedded), HELM's prompts and scoring, aspects as metric groups, and the board end to end."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helmflow import layout
from helmflow.aggregate import leaderboard_rows
from helmflow.clients import load_deployments
from helmflow.datasets import read_instances
from helmflow.pipeline import adapt_scenario, download_scenario
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import BoardError, load_board
from helmflow.records import prompt_from_row
from helmflow.scenarios import ScenarioError
from helmflow.storage import Store
from tests.support.vhelm_fixtures import write_mirror


@pytest.fixture
def mirror(tmp_path, monkeypatch) -> Path:
    root = write_mirror(tmp_path / "mirror")
    monkeypatch.setenv("HELMFLOW_MIRROR", str(root))
    return root


def plan(scenarios: list[str], **kw):
    return plan_board(load_board("vhelm"), load_deployments(), scenarios=scenarios, **kw)


def loaded(store: Store, label: str):
    s = plan([label]).scenarios[0]
    data = download_scenario(store, s)
    prompts = [prompt_from_row(r) for r in store.read_parquet(adapt_scenario(store, s, data).prompts_key).to_pylist()]
    return read_instances(store, data.instances_key), prompts


def test_mmmu_interleaves_images_at_their_tags_and_image_options(mirror, store):
    instances, prompts = loaded(store, "mmmu-Biology")
    assert [i.id for i in instances] == ["validation_Biology_1", "validation_Biology_2"]  # the open question is left out
    first = instances[0].input.parts
    assert [p.type for p in first] == ["text", "image", "text", "image", "text"]
    assert first[0].text == "Compare " and first[2].text == " with " and first[3].mime == "image/jpeg"
    assert first[4].text == " (Biology): which has more sides?"
    second = instances[1]
    assert [r.text for r in second.references] == ["<image 1>", "<image 2>", "<image 3>"]
    assert all(r.image is not None for r in second.references) and second.references[1].correct
    p = next(p for p in prompts if p.instance_id == "validation_Biology_2")
    assert len(p.media) == 3 and p.output_mapping == {"A": "<image 1>", "B": "<image 2>", "C": "<image 3>"}
    assert all(store.exists(m.uri) for m in p.media)


def test_pope_is_yes_no_multiple_choice_over_all_shards(mirror, store):
    instances, prompts = loaded(store, "pope")
    assert len(instances) == 9
    assert all([r.text for r in i.references] == ["Yes", "No"] for i in instances)
    assert sum(i.references[0].correct for i in instances) == 3
    assert prompts[0].text().startswith("Answer the multiple choice question by just giving the letter")
    assert prompts[0].text().endswith("A. Yes\nB. No\nAnswer:")


def test_exams_v_filters_language_group_and_type_and_sends_the_image_alone(mirror, store):
    instances, _ = loaded(store, "exams_v-German")
    assert [i.id for i in instances] == ["s0-2", "s1-2", "s2-2"]
    assert all(len(i.input.parts) == 1 and i.input.parts[0].type == "image" for i in instances)
    assert [r.text for r in instances[0].references] == ["C"]


def test_mm_star_category_and_a_okvqa_choices(mirror, store):
    instances, _ = loaded(store, "mm_star-math")
    assert len(instances) == 3 and all(i.split == "valid" for i in instances)
    instances, _ = loaded(store, "a_okvqa")
    assert [sum(r.correct for r in i.references) for i in instances] == [1, 1, 1, 1]
    assert instances[2].references[2].correct


def test_a_broken_image_names_the_file_and_row(mirror, store):
    path = next(mirror.glob("pope/*/data/test-00001-of-00003.parquet"))
    table = pq.read_table(path).to_pylist()
    table[2]["image"] = {"bytes": table[2]["image"]["bytes"][: len(table[2]["image"]["bytes"]) // 2], "path": "x.png"}
    pq.write_table(pa.Table.from_pylist(table, schema=pq.read_schema(path)), path)
    with pytest.raises((ScenarioError, BoardError), match=r"data/test-00001-of-00003.parquet row 2: unreadable or truncated"):
        download_scenario(store, plan(["pope"]).scenarios[0])


def test_unpinned_scenarios_refuse_the_hub(monkeypatch):
    monkeypatch.delenv("HELMFLOW_MIRROR", raising=False)
    with pytest.raises(BoardError, match="no source revision is pinned .* never reads hf://datasets/MMMU/MMMU; it runs from a mirror only"):
        plan(["mmmu-Art"])


def test_board_columns_are_groups_and_aspects_with_mean_win_rate_over_groups(mirror):
    board = plan(["mmmu-Art", "mmmu-Math", "pope", "mm_star-math"], models=["offline/first-option", "offline/echo"])
    from helmflow.outcomes import RunOutcome

    run_ids = {(r.deployment.name, r.scenario.label): r.run_id for r in board.runs}  # cells join by run id

    def run(model, label, score):
        return RunOutcome(run_id=run_ids[(model, label)], scenario=label, deployment=model, status="complete", uri="u",
                          main_metric="m", score=score, ci_low=score, ci_high=score, error_rate=0, cost_usd=0,
                          prompt_tokens=0, output_tokens=0)

    scores = {"offline/first-option": {"mmmu-Art": 1.0, "mmmu-Math": 0.0, "pope": 0.2, "mm_star-math": 0.9},
              "offline/echo": {"mmmu-Art": 0.2, "mmmu-Math": 0.2, "pope": 0.6, "mm_star-math": 0.1}}
    rows = {r["deployment"]: r for r in leaderboard_rows(board, [run(m, lab, s) for m, d in scores.items() for lab, s in d.items()])}
    first = rows["offline/first-option"]
    assert first["group:mmmu"] == 0.5 and first["group:pope"] == 0.2  # a group is the mean of its runs
    assert first["mean_win_rate"] == pytest.approx(2 / 3)  # wins mmmu and mm_star_reasoning, loses pope
    assert first["aspect:reasoning"] == 1.0 and first["aspect:visual_perception"] == 0.0
    assert rows["offline/echo"]["aspect:visual_perception"] == 1.0


@pytest.mark.slow
def test_helmflow_run_vhelm_end_to_end_against_the_dev_server(mirror, tmp_path, dev_server, prefect_server):
    from tests.support.cli import run_cli

    models = tmp_path / "models.yaml"
    models.write_text(json.dumps({"deployments": [
        {"name": "dev/vlm", "client": "openai-compatible", "model": "dev-vlm", "base_url": dev_server.openai_url,
         "context_window": 32768, "max_concurrency": 16}]}))
    storage = tmp_path / "store"
    proc = run_cli("run", "vhelm", "--models-file", str(models), "--models", "dev/vlm", "--max-instances", "2",
                   "--storage", str(storage), env={"HELMFLOW_MIRROR": str(mirror)}, timeout=900)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    store = Store(str(storage))
    latest = store.read_json(layout.latest("vhelm", subset=True))  # --models/--max-instances: a subset release
    prefix = latest["uri"].removeprefix(store.root + "/")
    board = store.read_parquet(f"{prefix}/leaderboard.parquet").to_pylist()
    assert [r["deployment"] for r in board] == ["dev/vlm"]
    assert {"aspect:reasoning", "aspect:knowledge", "aspect:visual_perception", "group:mmmu"} <= set(board[0])
    release = store.read_json(f"{prefix}/release.json")
    assert release["aspects"]["reasoning"] == ["mmmu", "exams_v", "mm_star_reasoning"]
    stats = dev_server.stats()
    # 6 MM-Star + 30 MMMU + POPE + A-OKVQA + 3 EXAMS-V runs, 2 instances each, every request with images
    assert stats["by_endpoint"] == {"chat": 82} and stats["answered"] == 82
    assert stats["images"] >= 82
    # images were unpacked into the content-addressed store, each once (the fixtures reuse pictures)
    distinct = {hashlib.sha256(cell["bytes"]).hexdigest() for f in mirror.rglob("*.parquet")
                for row in pq.read_table(f).to_pylist() for cell in row.values() if isinstance(cell, dict) and cell.get("bytes")}
    stored = {key.split("/")[1].split(".")[0] for key in store.find("media")}
    assert stored <= distinct and len(stored) >= 15
    assert all(hashlib.sha256(store.read_bytes(k)).hexdigest() == k.split("/")[1].split(".")[0] for k in store.find("media"))


@pytest.mark.slow  # a local Hub server
def test_helmflow_mirror_vhelm_says_which_pins_are_unverified_and_records_sha256(tmp_path, monkeypatch):
    """``helmflow mirror vhelm``: the snapshot-read revisions are fetched from the (local) Hub and their
    files' sha256 recorded; every unverified pin is said once with how to verify; unpinned ones fail."""
    from tests.support.cli import run_cli
    from tests.support.hub_server import HubServer

    monkeypatch.delenv("HELMFLOW_MIRROR", raising=False)
    source = write_mirror(tmp_path / "fixtures")
    repos = {"mm_star": "Lin-Chen/MMStar", "pope": "lmms-lab/POPE", "exams_v": "Rocktim/EXAMS-V"}
    with HubServer(tmp_path / "hub") as hub:
        for scenario, repo in repos.items():
            for path in (source / scenario).rglob("*.parquet"):
                revision, *filename = path.relative_to(source / scenario).parts
                hub.add_file(repo, revision, "/".join(filename), path.read_bytes())
        out = run_cli("mirror", "vhelm", "--to", str(tmp_path / "mirror"),
                      env={"HF_ENDPOINT": hub.url, "COLUMNS": "400", "HELMFLOW_MIRROR": ""})
    text = " ".join(out.stdout.split())
    assert out.returncode == 1, out.stdout + out.stderr
    for scenario, repo in repos.items():
        revision = next((source / scenario).iterdir()).name
        assert text.count(f"PIN UNVERIFIED: {scenario} @ {revision}: revision read off stored Hub page snapshots") == 1
        assert f"check in {repo}'s commit history that {revision[:12]}" in text
        manifest = json.loads((tmp_path / "mirror" / scenario / revision / "helmflow-mirror.json").read_text())
        for filename, entry in manifest["files"].items():
            digest = hashlib.sha256((source / scenario / revision / filename).read_bytes()).hexdigest()
            assert entry["sha256"] == digest and f"revision {revision}" in entry["verified_against"]
            assert digest in text
    for scenario, repo in (("mmmu", "MMMU/MMMU"), ("a_okvqa", "HuggingFaceM4/A-OKVQA")):
        assert text.count(f"PIN UNVERIFIED: {scenario}: no revision of {repo} could be verified") == 1
    assert "not mirrored (31 of 41): mmmu x30, a_okvqa" in text  # the others are mirrored


def test_a_okvqa_dialect_fairness_variant_on_the_fixtures(mirror, store, monkeypatch):
    """A-OKVQA with HELM's ``dialect`` perturbation (VHELM's a_okvqa_dialect): the text parts change,
    the image does not, it is its own run, and the board's fairness column is the per-instance worst
    case over original and dialect. HELM's SAE->AAVE mapping is not shipped, so the perturbation reads
    the perturbation tests' made-up mapping here; flows/vhelm.yaml leaves it out until the file is."""
    import dataclasses

    from helmflow.aggregate import perturbation_cells
    from helmflow.perturbations import PERTURBATIONS
    from helmflow.pipeline import publish_run, query_pair, score_pair

    mapping = Path(__file__).parent / "data" / "dialect_fixture_mapping.json"
    fixture = dataclasses.replace(PERTURBATIONS.get("dialect"), data=(), params={"prob": 1.0, "mapping": str(mapping)})
    monkeypatch.setitem(PERTURBATIONS._items, "dialect", fixture)
    spec = load_board("vhelm").model_dump(mode="json")
    for entry in spec["scenarios"]:
        if entry["name"] == "a_okvqa":
            entry["perturbations"] = ["dialect"]
    board = plan_board(load_board(spec), load_deployments(), scenarios=["a_okvqa"], models=["offline/first-option"])
    [copy] = board.perturbed
    assert copy.label == "a_okvqa~dialect" and copy.perturbation.kind == "fairness"
    assert [c.key for g in board.spec.metric_groups if g.name == "fairness" for c in g.columns] == ["a_okvqa/fairness"]
    original, perturbed = board.scenarios[0], copy
    prompts = {}
    data = {}
    for s in (original, perturbed):
        data[s.label] = download_scenario(store, s)
        prompts[s.label] = [prompt_from_row(r) for r in store.read_parquet(
            adapt_scenario(store, s, data[s.label]).prompts_key).to_pylist()]
    before, after = prompts["a_okvqa"], prompts["a_okvqa~dialect"]
    assert len(after) == len(before) == 4  # "What could this shape hold?": every question changes
    for b, a in zip(before, after):
        assert "What could this shape hold?" in b.query and "What could dis shape hold?" in a.query
        assert [m.sha256 for m in a.media] == [m.sha256 for m in b.media]  # images untouched
    outcomes = []
    for run in board.runs:
        query = query_pair(store, run, adapt_scenario(store, run.scenario, data[run.scenario.label]))
        outcomes.append(publish_run(store, run, query, score_pair(store, run, data[run.scenario.label], query)))
    cells = perturbation_cells(store, board, outcomes)
    # always "A": right on the one instance whose answer is A, in both texts -> worst case 1/4
    assert [o.score for o in outcomes] == [0.25, 0.25]
    assert cells[("offline/first-option", "a_okvqa/fairness")][0] == 0.25
