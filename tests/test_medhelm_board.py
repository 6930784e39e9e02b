"""The MedHELM board: its category tables, `show` and `reproduce --explain` offline, and `helmflow run medhelm`
end to end through the CLI on fixtures mirrored by `helmflow mirror medhelm`, against the dev server scripted
as a model and an offline constant model, on a real Prefect server."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.devserver import start_dev_server
from helmflow.scenarios.aci_bench import COMMIT as ACI_COMMIT
from helmflow.scenarios.ehr_sql import COMMIT as EHRSQL_COMMIT
from helmflow.scenarios.med_dialog import BUNDLE
from helmflow.scenarios.medec import COMMIT as MEDEC_COMMIT
from helmflow.scenarios.medec import TEST_PATH as MEDEC_PATH
from helmflow.scenarios.medi_qa import FILENAME as MEDIQA_FILE
from helmflow.scenarios.mtsamples import MTSamplesProcedures, MTSamplesReplicate
from helmflow.scenarios.pubmed_qa import COMMIT as PUBMED_COMMIT
from helmflow.scenarios.race_based_med import FILENAME as RACE_FILE
from tests.support.cli import REPO, run_cli
from tests.support.devserver import FAST_RETRY
from tests.support.lite_fixtures import medqa_rows, medqa_zip, serve
from tests.support.medhelm_fixtures import (
    ACI_FILES,
    MED_DIALOG,
    MTSAMPLES_PROCEDURES,
    MTSAMPLES_REPLICATE,
    ehrshot_release,
    ehrsql_files,
    headqa_parquet,
    medalign_release,
    medbullets_csv,
    medcalc_parquet,
    medec_csv,
    medhallu_parquet,
    medication_xlsx,
    mediqa_xml,
    medmcqa_dev_jsonl,
    mtsamples_zip,
    pubmed_json,
    race_docx,
    src_tgt,
)

CATEGORIES = ["clinical_decision_support", "clinical_note_generation", "patient_communication", "medical_research",
              "administration_and_workflow"]


def test_the_board_has_a_table_and_an_efficiency_table_per_category():
    from helmflow.plan.spec import load_board

    spec = load_board("medhelm")
    groups = {g.name: g for g in spec.metric_groups}
    assert list(groups) == [n for c in CATEGORIES for n in (c, f"{c}_efficiency")]
    assert spec.aggregation == ["win_rate"] and spec.max_instances == 1000
    assert all(g.aggregation == ["win_rate"] for g in groups.values())
    assert all(c.metric == "latency_s" and c.lower_is_better for c in groups["medical_research_efficiency"].columns)
    labels = {s.group or s.label for s in spec.scenarios}  # MedDialog's two subsets are one column
    assert {c.scenario for g in groups.values() for c in g.columns} == labels


@pytest.mark.slow
def test_show_and_reproduce_explain_work_offline():
    out = run_cli("show", "medhelm", env={"HELMFLOW_MIRROR": ""})
    assert out.returncode == 0, out.stderr
    assert "ehr_sql" in out.stdout and "medcalc_bench_accuracy" in out.stdout
    # the credential-gated scenarios whose files are not here are left out and named, with where to get access
    shown = " ".join(out.stdout.split())
    assert "left out: mimiciv_billing_code: mimiciv_icd10.feather is credential-gated" in shown
    assert "https://physionet.org/content/mimiciv/" in shown and "$HELMFLOW_MIRROR_MIMICIV_BILLING_CODE" in shown
    assert "left out: mimic_bhc" in shown and "left out: mimic_rrs: test.findings.tok is credential-gated" in shown
    assert "left out: ehrshot-lab_anemia: data/data.parquet is credential-gated" in shown
    assert "left out: medalign: clinician-reviewed-model-responses.tsv is credential-gated" in shown
    assert "https://redivis.com/datasets/53gc-8rhx41kgt" in shown and "https://redivis.com/datasets/48nr-frxd97exb" in shown
    out = run_cli("reproduce", "medhelm", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "at most 1000 instances" in text and "read-only connection" in text
    assert "every entry of HELM's run_entries_medhelm_public.conf" in text
    assert "HELM's Stanford-private conf is the medhelm-private board" in text
    # HELM's jury, pinned, and what stands in for it; the scenarios left out
    assert ("HELM published medhelm with a jury of stanfordhealthcare/gpt-4o-2024-05-13, "
            "stanfordhealthcare/llama-3.3-70b-instruct, stanfordhealthcare/claude-3-7-sonnet-20250219") in text
    assert "openai/gpt-4o-2024-05-13 alone, stands in for HELM's three" in text
    assert "plus every entry of the gated conf: ehrshot (its three tasks, one column), medalign," in text
    assert "gated scenarios: ehrshot and medalign (Stanford, through Redivis)" in text and "scenarios left out" not in text
    assert "administration and workflow" in text
    assert "pairing: helm (the default) keeps HELM's pairing" in text and "tokens are counted with tiktoken's cl100k_base" in text


def _sources(root):
    raw = "raw.githubusercontent.com"
    ehr = ehrsql_files()
    files = {
        f"{raw}/abachaa/MEDEC/{MEDEC_COMMIT}/{MEDEC_PATH}": medec_csv(),
        f"{raw}/pubmedqa/pubmedqa/{PUBMED_COMMIT}/data/ori_pqal.json": pubmed_json(),
        **{f"{raw}/glee4810/EHRSQL/{EHRSQL_COMMIT}/dataset/ehrsql/eicu/{n}": ehr[n]
           for n in ("train.json", "valid.json", "test.json", "eicu.sql")},
        "github.com/raulista1997/benchmarkdata/raw/c4c252443fa9c52afb6960f53e51be278639bea2/eicu.sqlite": ehr["eicu.sqlite"],
        "drive.google.com/uc": medqa_zip(20, 6, 8),
        f"github.com/raulista1997/benchmarkdata/archive/{MTSamplesReplicate.COMMIT}.zip": mtsamples_zip(
            MTSamplesReplicate.COMMIT, "mtsamples_processed", MTSAMPLES_REPLICATE),
        f"github.com/raulista1997/benchmarkdata/archive/{MTSamplesProcedures.COMMIT}.zip": mtsamples_zip(
            MTSamplesProcedures.COMMIT, "mtsample_procedure", MTSAMPLES_PROCEDURES),
        f"{raw}/abachaa/MEDIQA2019/master/MEDIQA_Task3_QA/{MEDIQA_FILE}": mediqa_xml(),
        f"{raw}/HanjieChen/ChallengeClinicalQA/refs/heads/main/medbullets/medbullets_op5.csv": medbullets_csv(),
        "github.com/abachaa/Medication_QA_MedInfo2019/raw/master/MedInfo2019-QA-Medications.xlsx": medication_xlsx(),
        **{f"worksheets.codalab.org/rest/bundles/{BUNDLE}/contents/blob/{subset}/test.json": src_tgt(pairs)
           for subset, pairs in MED_DIALOG.items()},
        **{f"{raw}/wyim/aci-bench/{ACI_COMMIT}/data/challenge_data_json/{n}": src_tgt(p) for n, p in ACI_FILES.items()},
    }
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


@pytest.mark.slow
def test_helmflow_run_medhelm_end_to_end_on_mirrored_fixtures(tmp_path, prefect_server):
    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    own = {}  # the Hub datasets HELM loads unpinned, and MedMCQA (its Drive URL differs from MedQA's by the query
    for name, filename, data in (("medcalc_bench", "test.parquet", medcalc_parquet()),  # only): a folder each
                                 ("head_qa", "test.parquet", headqa_parquet()), ("med_mcqa", "dev.json", medmcqa_dev_jsonl()),
                                 ("medhallu", "train.parquet", medhallu_parquet()),
                                 ("race_based_med", RACE_FILE, race_docx())):
        (tmp_path / name).mkdir()
        (tmp_path / name / filename).write_bytes(data)
        own[f"HELMFLOW_MIRROR_{name.upper()}"] = str(tmp_path / name)
    # the two Stanford EHR sets, from the user's folders (--data-path): EHRSHOT with one of its three tasks' labels
    ehrshot_release(tmp_path / "ehrshot", ("guo_readmission",))
    medalign_release(tmp_path / "medalign")
    with serve(_sources(tmp_path / "src")) as host:
        env = {"HELMFLOW_SOURCE_HOST": host.url, "HELMFLOW_GITHUB_RAW": f"{host.url}/raw.githubusercontent.com", **own}
        out = run_cli("mirror", "medhelm", "--to", str(mirror), env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "not mirrored: mimiciv_billing_code: mimiciv_icd10.feather is credential-gated" in " ".join(out.stdout.split())
    with start_dev_server("--policy", "fn:tests.support.medhelm_fixtures:policy", env={"PYTHONPATH": str(REPO)}) as server:
        models = tmp_path / "models.yaml"
        def dev(name, model):
            return {"name": name, "client": "openai-compatible", "model": model, "base_url": server.openai_url,
                    "retry": FAST_RETRY, "max_concurrency": 16}

        models.write_text(yaml.safe_dump({"deployments": [
            dev("dev/model", "model-x"), *(dev(f"dev/judge-{j}", f"judge-{j}") for j in "abc"),
            {"name": "offline/says-CORRECT", "client": "offline", "model": "says-CORRECT",
             "options": {"behavior": "constant", "answer": "CORRECT"}}]}))
        out = run_cli("run", "medhelm", "--models", "dev/model,offline/says-CORRECT", "--models-file", str(models),
                      "--judge", "dev/judge-a,dev/judge-b,dev/judge-c", "--storage", str(storage),
                      "--data-path", f"ehrshot={tmp_path / 'ehrshot'}", "--data-path", f"medalign={tmp_path / 'medalign'}",
                      env={"HELMFLOW_MIRROR": str(mirror), **own}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "left out: mimiciv_billing_code" in out.stdout  # the gated files are not here: named, the rest ran
    assert "left out: mimic_bhc" in out.stdout
    latest = json.loads((storage / "leaderboards/medhelm/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    model, constant = rows["dev/model"], rows["offline/says-CORRECT"]
    # MedCalc-Bench: the model gives every gold answer; HELM scores the lab-category one 0 ("not supported")
    assert model["medcalc_bench"] == pytest.approx(5 / 6) and constant["medcalc_bench"] == 0.0
    # MEDEC: notes 0, 1 and 3 answered right, note 2 (an error) answered CORRECT; the constant model gets the
    # two correct notes
    assert model["medec"] == 0.75 and constant["medec"] == 0.5
    # MedQA, zero-shot: the model always answers A (the fixture's valid + test rows whose answer is A)
    golds = [r["answer_idx"] for r in medqa_rows(6, "dev", 6) + medqa_rows(8, "test", 7)]
    assert model["med_qa"] == pytest.approx(golds.count("A") / 14) and constant["med_qa"] == 0.0
    assert model["head_qa"] == pytest.approx(1 / 3)  # B, right on one of the three questions without an image
    assert model["medbullets"] == 0.5 and model["med_mcqa"] == 0.5
    assert constant["head_qa"] == constant["medbullets"] == constant["med_mcqa"] == 0.0
    assert model["pubmed_qa"] == 0.5  # A (yes) on yes, no, maybe, yes
    # EHRSHOT: A (yes) on two yes and two no labels; the folder has no labels for the other two tasks, which the
    # board leaves out, so the column is the one task's
    assert "left out: ehrshot-lab_anemia: labels/lab_anemia/labels.parquet is credential-gated" in " ".join(out.stdout.split())
    assert model["ehrshot-guo_readmission"] == model["ehrshot/exact_match"] == 0.5 and "ehrshot-lab_anemia" not in model
    assert constant["ehrshot/exact_match"] == 0.0
    # MedAlign: instruction 2 (2, 2, 2 from judge-a) and instruction 1 (5, 5, 5 and 3, 3, 3; judge-c dropped): 3
    assert model["medalign"] == constant["medalign"] == pytest.approx((2 + 4) / 2)
    # the jury (stub judges; a judge without a marker replies with prose that does not parse, and is dropped):
    # MedicationQA: (5+4+4+3+3+3)/6 = 22/6; an empty answer is not judged (HELM's default, 1); (2+2+2+4+4+4)/6 = 3.
    # The constant model's non-empty answer to the second question is judged by judge-a alone: 5
    assert model["medication_qa"] == pytest.approx((22 / 6 + 1 + 3) / 3)
    assert constant["medication_qa"] == pytest.approx((22 / 6 + 5 + 3) / 3)
    # MedDialog: healthcaremagic (4 + (1+2+3)/3) / 2 = 3, icliniq 5; the column is the mean of the two subsets
    assert model["med_dialog/med_dialog_accuracy"] == constant["med_dialog/med_dialog_accuracy"] == pytest.approx(4.0)
    assert model["med_dialog-healthcaremagic"] == pytest.approx(3.0) and model["med_dialog-icliniq"] == 5.0
    # MTSamples: the model's empty plan scores HELM's default 1 (the constant model's is judged 4), then 2 each;
    # procedures: 5 each
    assert model["mtsamples_replicate"] == 1.5 and constant["mtsamples_replicate"] == 3.0
    assert model["mtsamples_procedures"] == constant["mtsamples_procedures"] == 5.0
    # MEDIQA: (4+4+4+2+2+2)/6 = 3 and 5, for both models (the stub judges read the question's markers)
    assert model["medi_qa"] == constant["medi_qa"] == pytest.approx(4.0)
    # ACI-Bench: the empty note and the note no judge parsed score HELM's default for note generation, 1
    assert model["aci_bench"] == pytest.approx((1 + 3 + 1) / 3) and constant["aci_bench"] == pytest.approx((5 + 3 + 1) / 3)
    # EHRSQL (valid + test): right, wrong rows, an impossible question left empty, DROP TABLE (refused), right
    assert model["ehr_sql"] == pytest.approx(3 / 5) and constant["ehr_sql"] == 0.0
    # MedHallu: always 0 (factual), right on the two ground-truth answers of four; race-based: A (yes) on yes, no
    assert model["medhallu"] == 0.5 and model["race_based_med"] == 0.5
    assert constant["medhallu"] == constant["race_based_med"] == 0.0
    db = next(storage.glob("datasets/ehr_sql/*/eicu.sqlite"))
    assert db.read_bytes() == ehrsql_files()["eicu.sqlite"]  # the DROP wrote nothing
    # clinical decision support: MTSamples lost, EHRSHOT won, MedAlign tied; note generation: ACI-Bench lost,
    # procedures tied; patient communication: MedicationQA lost, MedDialog and MEDIQA tied
    wins = {"clinical_decision_support": 7.5 / 9, "clinical_note_generation": 0.25, "patient_communication": 1 / 3,
            "medical_research": 1.0}
    for category, win in wins.items():
        assert model[f"{category} mean_win_rate"] == pytest.approx(win)
        assert constant[f"{category} mean_win_rate"] == pytest.approx(1 - win)
        assert model[f"{category}_efficiency mean_win_rate"] is not None
    assert "mimiciv_billing_code" not in model and "administration_and_workflow mean_win_rate" not in model
