"""HELM Lite's MATH, LegalBench and WMT14 scenarios on fixture files in the Parquet conversions'
schema: HELM's instance order and ids, its train pools and evaluation samples (ids asserted against
independent re-computations of HELM's rules), the prompts' shape, and a board run through the CLI."""

from __future__ import annotations

import io
import json

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.errors import HelmflowError
from helmflow.pipeline import adapt_scenario, download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.records import prompt_from_row
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.helm_lite import FOLLOW_FORMAT_PREFIX, FOLLOW_FORMAT_SUFFIX
from helmflow.storage import Store
from tests.support.lite_fixtures import gsm_files
from tests.support.lite_hub_fixtures import LEGALBENCH_SCHEMAS, legalbench_files, math_files, wmt_files


def write_mirror(folder, files: dict[str, bytes]):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return folder


def prompts(tmp_path, entry: ScenarioEntry, max_instances: int | None = None) -> list:
    plan = plan_scenario(entry, max_instances)
    store = Store(str(tmp_path / "store"))
    prompt_set = adapt_scenario(store, plan, download_scenario(store, plan))
    return [prompt_from_row(r) for r in store.read_parquet(prompt_set.prompts_key).to_pylist()]


# --------------------------------------------------------------------------- MATH
@pytest.fixture
def math_mirror(tmp_path, monkeypatch):
    folder = write_mirror(tmp_path / "math", math_files())
    monkeypatch.setenv("HELMFLOW_MIRROR_MATH", str(folder))
    return folder


def helm_math_order(folder, split_file: str) -> list[dict]:
    """``Dataset.sort("problem").shuffle(seed=42)``, written out again from datasets' definition."""
    rows = pq.read_table(folder / split_file).to_pylist()
    rows.sort(key=lambda r: r["problem"])
    return [rows[k] for k in np.random.default_rng(42).permutation(len(rows))]


@pytest.mark.parametrize("subject, kind, level", [("algebra", "Algebra", 1), ("counting_and_probability", "Counting & Probability", 3)])
def test_math_instances_in_helm_order(math_mirror, subject, kind, level):
    scen = get_scenario("math", {"subject": subject, "level": level})
    instances = scen.load({n: str(math_mirror / n) for n in ("train.parquet", "test.parquet")})
    expected = [(r["problem"], r["solution"], split) for name, split in (("train.parquet", "train"), ("test.parquet", "test"))
                for r in helm_math_order(math_mirror, name) if r["type"] == kind and r["level"] == f"Level {level}"]
    assert [(i.input.text, i.references[0].text, i.split) for i in instances] == expected
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(expected))]
    assert all(len(i.references) == 1 and i.references[0].correct for i in instances)
    assert sum(i.split == "train" for i in instances) >= 15 and sum(i.split == "test" for i in instances) >= 10


def test_math_prompt_has_eight_same_subject_worked_examples(math_mirror, tmp_path):
    ps = prompts(tmp_path, ScenarioEntry(name="math", params={"subject": "geometry"}))
    train_problems = {r["problem"] for r in pq.read_table(math_mirror / "train.parquet").to_pylist()
                      if r["type"] == "Geometry" and r["level"] == "Level 1"}
    test_rows = [r for r in pq.read_table(math_mirror / "test.parquet").to_pylist() if r["type"] == "Geometry" and r["level"] == "Level 1"]
    assert len(ps) == len(test_rows) > 10  # every level-1 geometry test problem (fewer than 1,000)
    first = ps[0]
    assert first.head == "Given a mathematics problem, determine the answer. Simplify your answer as much as possible.\n###\n"
    assert len(first.examples) == 8 and all(e.endswith("\n###\n") and "\\boxed{" in e for e in first.examples)
    assert {e.split("\n")[0].removeprefix("Problem: ") for e in first.examples} <= train_problems
    assert first.query.startswith("Problem: ") and first.query.endswith("\nAnswer:")
    assert all(p.examples == first.examples for p in ps)  # one draw per trial, as HELM


def test_math_bad_parameters_and_missing_mirror(tmp_path, monkeypatch):
    with pytest.raises(ScenarioError, match="subject"):
        get_scenario("math", {"subject": "calculus"})
    with pytest.raises(ScenarioError, match="level"):
        get_scenario("math", {"subject": "algebra", "level": 6})
    monkeypatch.delenv("HELMFLOW_MIRROR_MATH", raising=False)
    monkeypatch.delenv("HELMFLOW_MIRROR", raising=False)
    with pytest.raises(HelmflowError, match="HELMFLOW_MIRROR_MATH"):
        prompts(tmp_path, ScenarioEntry(name="math", params={"subject": "algebra"}))


# --------------------------------------------------------------------------- LegalBench
@pytest.fixture
def legal_mirror(tmp_path, monkeypatch):
    files: dict[str, bytes] = {}
    for subset in LEGALBENCH_SCHEMAS:
        files |= legalbench_files(subset, n_test=1500 if subset == "international_citizenship_questions" else 40)
    folder = write_mirror(tmp_path / "legal", files)
    monkeypatch.setenv("HELMFLOW_MIRROR_LEGALBENCH", str(folder))
    return folder


def test_legalbench_fields_labels_and_output_nouns(legal_mirror, tmp_path):
    scen = get_scenario("legalbench", {"subset": "corporate_lobbying"})
    instances = scen.load({f"corporate_lobbying-{s}.parquet": str(legal_mirror / f"corporate_lobbying-{s}.parquet") for s in ("train", "test")})
    rows = pq.read_table(legal_mirror / "corporate_lobbying-train.parquet").to_pylist()
    assert instances[0].input.text == (
        f"Official title of bill: {rows[0]['bill_title']}\nOfficial summary of bill: {rows[0]['bill_summary']}\n"
        f"Company name: {rows[0]['company_name']}\nCompany business description: {rows[0]['company_description']}"
    )
    assert instances[0].references[0].text == rows[0]["answer"] and instances[0].split == "train"
    assert [i.split for i in instances] == ["train"] * 6 + ["test"] * 40
    nouns = {"abercrombie": "Type", "corporate_lobbying": "Label", "international_citizenship_questions": "Answer",
             "function_of_decision_section": "Function", "proa": "Answer"}
    for subset, noun in nouns.items():
        (first, *_) = prompts(tmp_path / subset, ScenarioEntry(name="legalbench", params={"subset": subset}), 5)
        assert len(first.examples) == 5 and first.query.endswith(f"\n{noun}:")
        assert all(f"\n{noun}: " in e for e in first.examples)


def test_legalbench_evaluation_sample_is_helms(legal_mirror, tmp_path):
    """1,500 test rows, 1,000 drawn: HELM's np.random.seed(0); np.random.choice over the test ids."""
    ps = prompts(tmp_path, ScenarioEntry(name="legalbench", params={"subset": "international_citizenship_questions"}), 1000)
    test_ids = np.array([f"id{6 + k}" for k in range(1500)], dtype=object)  # 6 train rows come first
    np.random.seed(0)
    assert [p.instance_id for p in ps] == list(np.random.choice(test_ids, 1000, replace=False))


def test_legalbench_missing_column_is_one_clear_error(tmp_path):
    data = legalbench_files("proa")
    table = pq.read_table(io.BytesIO(data["proa-test.parquet"])).drop(["text"])
    buf = io.BytesIO()
    pq.write_table(table, buf)
    (tmp_path / "proa-test.parquet").write_bytes(buf.getvalue())
    (tmp_path / "proa-train.parquet").write_bytes(data["proa-train.parquet"])
    with pytest.raises(ScenarioError, match="has no column 'text'"):
        get_scenario("legalbench", {"subset": "proa"}).load({n: str(tmp_path / n) for n in ("proa-train.parquet", "proa-test.parquet")})


# --------------------------------------------------------------------------- WMT14
@pytest.fixture
def wmt_mirror(tmp_path, monkeypatch):
    folder = write_mirror(tmp_path / "wmt", wmt_files("de-en"))
    monkeypatch.setenv("HELMFLOW_MIRROR_WMT_14", str(folder))
    return folder


@pytest.mark.slow
def test_wmt_train_pool_and_evaluation_sample_are_helms(wmt_mirror, tmp_path):
    scen = get_scenario("wmt_14", {"language_pair": "de-en"})
    instances = scen.load({f"de-en-{s}.parquet": str(wmt_mirror / f"de-en-{s}.parquet") for s in ("train", "validation", "test")})
    train_rows = pq.read_table(wmt_mirror / "de-en-train.parquet").column("translation").to_pylist()
    # HELM: shuffle(seed=42)[:20000], then keep the first row of each English sentence
    shuffled = [train_rows[k] for k in np.random.default_rng(42).permutation(len(train_rows))[:20_000]]
    seen, expected = set(), []
    for row in shuffled:
        if row["en"] not in seen:
            seen.add(row["en"])
            expected.append((row["de"], row["en"]))
    train = [(i.input.text, i.references[0].text) for i in instances if i.split == "train"]
    assert train == expected and 19_000 < len(train) < 20_000  # the repeated sentences were dropped
    assert [i.split for i in instances[len(train):]] == ["valid"] * 700 + ["test"] * 800

    ps = prompts(tmp_path, ScenarioEntry(name="wmt_14", params={"language_pair": "de-en"}), 1000)
    pool = np.array([f"id{len(train) + k}" for k in range(1500)], dtype=object)
    np.random.seed(0)
    assert [p.instance_id for p in ps] == list(np.random.choice(pool, 1000, replace=False))
    first = ps[0]
    assert first.head == "Translate the following sentences from German to English.\n\n"
    assert len(first.examples) == 1 and first.examples[0].startswith("German: [de] train ")
    assert first.query.startswith("German: [de] ") and first.query.endswith("\nEnglish:")


def test_wmt_schema_errors_are_clear(tmp_path):
    files = wmt_files("de-en", n_train=10, n_valid=3, n_test=3)
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    with pytest.raises(ScenarioError, match="struct with fields 'cs' and 'en'"):  # de-en files read as cs-en
        get_scenario("wmt_14", {"language_pair": "cs-en"}).load({n.replace("de-en", "cs-en"): str(tmp_path / n) for n in files})
    with pytest.raises(ScenarioError, match="language_pair"):
        get_scenario("wmt_14", {"language_pair": "en-de"})


# --------------------------------------------------------------------------- GSM8K
@pytest.fixture
def gsm_mirror(tmp_path, monkeypatch):
    folder = write_mirror(tmp_path / "gsm", gsm_files(n_train=40))
    monkeypatch.setenv("HELMFLOW_MIRROR_GSM", str(folder))
    return folder


def test_gsm_references_rationale_shots_and_sample_are_helms(gsm_mirror, tmp_path):
    instances = get_scenario("gsm").load({n: str(gsm_mirror / n) for n in ("train.jsonl", "test.jsonl")})
    row = json.loads((gsm_mirror / "train.jsonl").read_text().splitlines()[0])
    boxes, pens = row["question"].split(" boxes hold ")[0].split(": ")[1], row["question"].split(" hold ")[1].split(" pens")[0]
    total = int(pens) * int(boxes)
    assert instances[0].references[0].text == (  # "####" -> "The answer is", newlines -> spaces, a final "."
        f"Each box holds {pens} pens and there are {boxes} boxes. {pens} * {boxes} = <<{pens}*{boxes}={total}>>{total} pens. "
        f"The answer is {total:,}."
    )
    assert [i.split for i in instances] == ["train"] * 40 + ["test"] * 1319

    ps = prompts(tmp_path, ScenarioEntry(name="gsm"), 1000)
    np.random.seed(0)  # HELM's sample of 1,000 of the 1,319 test problems (ids after the 40 train rows)
    assert [p.instance_id for p in ps] == list(np.random.choice(np.array([f"id{40 + k}" for k in range(1319)], dtype=object), 1000, replace=False))
    first = ps[0]
    assert len(first.examples) == 5
    assert all(e.startswith("Q: Fixture problem ") and "\nA: Each box" in e and e.endswith(".\n\n") and " The answer is " in e
               for e in first.examples)
    assert first.query.endswith("\nA:") and first.head == ""
    plan = plan_scenario(ScenarioEntry(name="gsm"), None)
    assert (plan.adapter.generation.max_tokens, plan.adapter.generation.stop, plan.main_metric) == (400, ["\n\n"], "final_number_exact_match")


def test_follow_format_wraps_every_lite_generation_scenario(math_mirror, tmp_path):
    plain = plan_scenario(ScenarioEntry(name="math", params={"subject": "algebra"}), None)
    wrapped = plan_scenario(ScenarioEntry(name="math", params={"subject": "algebra", "follow_format": True}), None)
    assert wrapped.prompt_version != plain.prompt_version
    (first, *_) = prompts(tmp_path, ScenarioEntry(name="math", params={"subject": "algebra", "follow_format": True}), 3)
    assert first.head.startswith(FOLLOW_FORMAT_PREFIX + "\n\nGiven a mathematics problem")
    assert first.query.endswith("\nAnswer:\n\n" + FOLLOW_FORMAT_SUFFIX + "\nAnswer:")
    for name, params, noun in (("legalbench", {"subset": "proa"}, "Answer:"), ("wmt_14", {"language_pair": "hi-en"}, "English:"),
                               ("gsm", {}, "A:")):
        spec = get_scenario(name, {**params, "follow_format": True}).default_adapter
        assert spec.global_prefix == FOLLOW_FORMAT_PREFIX + "\n\n" and spec.global_suffix.endswith("\n" + noun)


# --------------------------------------------------------------------------- a board through the CLI
@pytest.mark.slow
def test_lite_scenarios_run_through_the_cli(math_mirror, legal_mirror, wmt_mirror, tmp_path, cli, prefect_server):
    """MATH, LegalBench and WMT14 on one board, an offline model with one fixed reply; scores by hand."""
    reply = "The answer is $\\boxed{7}$."
    board = tmp_path / "board.yaml"
    board.write_text(yaml.safe_dump({
        "name": "lite-fixture", "version": "1", "models": ["fixture/constant"], "max_instances": 40,
        "scenarios": [
            {"name": "math", "label": "math_algebra", "params": {"subject": "algebra"}},
            {"name": "legalbench", "label": "legalbench_proa", "params": {"subset": "proa"}},
            {"name": "wmt_14", "label": "wmt_de", "params": {"language_pair": "de-en"}},
        ],
    }))
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [{
        "name": "fixture/constant", "client": "offline", "model": "constant",
        "options": {"behavior": "constant", "answer": reply},
    }]}))
    storage = tmp_path / "store"
    out = cli("run", "--board-file", str(board), "--models-file", str(models), "--storage", str(storage))
    assert out.returncode == 0, out.stdout + out.stderr
    runs = {json.loads(p.read_text())["scenario"]["name"]: json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")}
    assert set(runs) == {"math", "legalbench", "wmt_14"}
    assert runs["math"]["main_metric"] == "math_equiv_chain_of_thought"
    math_rows = [r for r in pq.read_table(math_mirror / "test.parquet").to_pylist() if r["type"] == "Algebra" and r["level"] == "Level 1"]
    sevens = sum(r["solution"].endswith("\\boxed{7}$.") for r in math_rows)
    assert 0 < sevens < len(math_rows) <= 40
    assert runs["math"]["score"] == pytest.approx(sevens / len(math_rows))  # every problem evaluated
    assert runs["legalbench"]["score"] == 0.0  # the reply is never a label
    assert runs["wmt_14"]["main_metric"] == "bleu_4" and runs["wmt_14"]["score"] == pytest.approx(0.0, abs=1e-9)
    summary = pq.read_table(io.BytesIO(next(storage.glob("runs/*/summary.parquet")).read_bytes()))
    assert summary.num_rows > 0
    wmt_dir = next(p.parent for p in storage.glob("runs/*/run.json") if json.loads(p.read_text())["scenario"]["name"] == "wmt_14")
    names = set(pq.read_table(io.BytesIO((wmt_dir / "summary.parquet").read_bytes())).column("name").to_pylist())
    assert {"bleu_4", "sacrebleu_corpus_bleu", "rouge_l", "bleu_1"} <= names

