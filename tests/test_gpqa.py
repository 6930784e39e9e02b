"""GPQA: HELM's seeded option shuffle, held-out train rows and ids, read from a GPQA-shaped CSV."""

from __future__ import annotations

import csv
import hashlib
import random

import pytest

from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import BoardError, ScenarioEntry
from helmflow.scenarios import ScenarioError, get_scenario
from tests.support.capabilities_fixtures import csv_bytes, gpqa_rows
from tests.support.hub_server import HubServer

REV = "90b8e5be2b1d3d2dbfe016cdab47981150600c4a"


@pytest.fixture
def gpqa_csv(tmp_path):
    path = tmp_path / "gpqa_main.csv"
    path.write_bytes(csv_bytes(gpqa_rows(448)))
    return path


def helm_gpqa(path) -> list[tuple[str, list[str], int]]:
    """HELM's GPQAScenario, re-implemented: (split, reference texts, correct index) per row."""
    rng = random.Random(42)  # HELM's random.seed(42): the same draws, and no other thread takes any
    out = []
    with open(path, newline="", encoding="utf-8") as fh:
        for idx, row in enumerate(csv.DictReader(fh)):
            refs = [(row["Correct Answer"].strip(), True)] + [(row[f"Incorrect Answer {k}"].strip(), False) for k in (1, 2, 3)]
            rng.shuffle(refs)
            split = "train" if idx in (339, 105) else "test"
            out.append((split, [t for t, _ in refs], [c for _, c in refs].index(True)))
    return out


def test_shuffle_splits_and_ids_equal_helms(gpqa_csv):
    instances = get_scenario("gpqa").load({"gpqa_main.csv": str(gpqa_csv)})
    expected = helm_gpqa(gpqa_csv)
    assert [i.id for i in instances] == [f"id{k}" for k in range(448)]
    assert [(i.split, [r.text for r in i.references], [r.correct for r in i.references].index(True))
            for i in instances] == expected
    assert [i.id for i in instances if i.split == "train"] == ["id105", "id339"]
    assert instances[105].extra == {"chain_of_thought": "Because item 105 is keyed that way."}
    # quoted commas, quotes, a newline and surrounding spaces survive CSV parsing, then are stripped
    assert instances[0].input.text == 'Fixture GPQA-shaped item 0: given "x, y" and\na second line, which is keyed?'
    # the correct position is spread over A-D, as a shuffle should
    assert {e[2] for e in expected} == {0, 1, 2, 3}


def test_subset_names_and_prompt_uses_parenthesised_letters(gpqa_csv):
    assert get_scenario("gpqa", {"subset": "gpqa_diamond"}).filename == "gpqa_diamond.csv"
    scen = get_scenario("gpqa")
    assert scen.default_adapter.reference_prefix == "(A) "
    assert scen.sources()[0].url == f"hf://datasets/Idavidrein/gpqa@{REV}/gpqa_main.csv"


def test_gated_source_without_token_fails_at_plan_time(tmp_path, monkeypatch):
    """Through the literal hf:// source URL the scenario declares, against the local Hub."""
    for var in ("HF_TOKEN", "HELMFLOW_MIRROR", "HELMFLOW_MIRROR_GPQA"):
        monkeypatch.delenv(var, raising=False)
    with HubServer(tmp_path / "hub", gated={"Idavidrein/gpqa": "hf_ok"}) as hub:
        hub.add_file("Idavidrein/gpqa", REV, "gpqa_main.csv", csv_bytes(gpqa_rows(3)))
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        with pytest.raises(BoardError) as err:
            plan_scenario(ScenarioEntry(name="gpqa"), None)
        assert str(err.value).startswith(f"scenario 'gpqa': hf://datasets/Idavidrein/gpqa@{REV}/gpqa_main.csv is in a gated")
        assert "HF_TOKEN" in str(err.value)
        monkeypatch.setenv("HF_TOKEN", "hf_ok")
        plan = plan_scenario(ScenarioEntry(name="gpqa"), None)
        # a CSV is a plain git blob on the Hub (no LFS sha256): plan time streamed it through sha256
        assert any("/resolve/" in r for r in hub.requests)
    assert plan.checksums == {"gpqa_main.csv": hashlib.sha256(csv_bytes(gpqa_rows(3))).hexdigest()}


def test_rows_with_missing_fields_are_rejected_by_index_only(tmp_path):
    data = csv_bytes(gpqa_rows(5)).decode()
    lines = data.split("\n")
    broken = "\n".join(lines[:-2] + ['"short row",x']) + "\n"
    path = tmp_path / "gpqa_main.csv"
    path.write_text(broken)
    with pytest.raises(ScenarioError) as err:
        get_scenario("gpqa").load({"gpqa_main.csv": str(path)})
    assert "data row 4 does not have 11 fields" in str(err.value)
    assert "short row" not in str(err.value)


@pytest.mark.slow
def test_capabilities_board_runs_both_scenarios(tmp_path, cli, prefect_server, gpqa_csv):
    """`helmflow run capabilities`: GPQA over hf:// from the local (gated) Hub, MMLU-Pro from a mirror."""
    import json

    import numpy as np
    import pyarrow.parquet as pq

    from tests.support.capabilities_fixtures import mmlu_pro_files

    mmlu = tmp_path / "mmlu"
    mmlu.mkdir()
    for name, data in mmlu_pro_files(n_test=300).items():
        (mmlu / name).write_bytes(data)
    storage = tmp_path / "store"
    with HubServer(tmp_path / "hub", gated={"Idavidrein/gpqa": "hf_ok"}) as hub:
        hub.add_file("Idavidrein/gpqa", REV, "gpqa_main.csv", gpqa_csv.read_bytes())
        out = cli("run", "capabilities", "--scenarios", "mmlu_pro,gpqa", "--max-instances", "40",
                  "--storage", str(storage),
                  env={"HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_ok", "HELMFLOW_MIRROR_MMLU_PRO": str(mmlu)})
        assert out.returncode == 0, out.stdout + out.stderr
        assert any(r.startswith("GET /datasets/Idavidrein/gpqa/resolve/") for r in hub.requests)
    assert "hf_ok" not in out.stdout + out.stderr
    runs = {r["scenario"]["label"]: r for r in (json.loads(p.read_text()) for p in storage.glob("runs/*/run.json"))}
    assert set(runs) == {"mmlu_pro", "gpqa"}

    def helm_sample(ids: list[str], n: int) -> list[str]:
        return list(np.random.RandomState(0).choice(np.array(ids, dtype=object), n, replace=False))

    # offline/first-option answers "The correct answer is (A).": the score is the share keyed A
    gpqa = helm_gpqa(gpqa_csv)
    picked = helm_sample([f"id{k}" for k, e in enumerate(gpqa) if e[0] == "test"], 40)
    assert runs["gpqa"]["score"] == pytest.approx(sum(gpqa[int(i[2:])][2] == 0 for i in picked) / 40)
    rows = pq.read_table(mmlu / "test.parquet").to_pylist()
    picked = set(helm_sample([f"id{r['question_id']}" for r in rows], 40))
    assert runs["mmlu_pro"]["score"] == pytest.approx(sum(r["answer"] == "A" for r in rows if f"id{r['question_id']}" in picked) / 40)
    assert runs["gpqa"]["adapter"]["generation"]["temperature"] == 1.0
