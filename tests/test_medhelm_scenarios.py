"""MedHELM's public scenarios read from fixtures in their raw shapes, and their rule-scored metrics on
hand-worked cases whose expected values are also what HELM 0.5.16's own metric classes return on the same
inputs (run in a separate crfm-helm venv; the numbers are written here)."""

from __future__ import annotations

import hashlib
import sqlite3

import pytest

from helmflow.media import scoring_media
from helmflow.metrics import METRICS
from helmflow.metrics.base import MetricInput
from helmflow.metrics.ehr_sql import QueryError, run_readonly
from helmflow.metrics.medhelm import medcalc_correct, medec_scores
from helmflow.records import AdapterSpec, Completion, Input, Instance, Reference
from helmflow.scenarios import get_scenario
from helmflow.scenarios.ehr_sql import QUESTION_LABEL, extract_schema
from helmflow.storage import Store
from tests.support.medhelm_fixtures import (
    EHRSQL_ENTRIES,
    EICU_SQL,
    ehrsql_files,
    medcalc_parquet,
    medec_csv,
    pubmed_json,
)


def _files(tmp_path, files: dict[str, bytes]) -> dict[str, str]:
    out = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        out[name] = str(tmp_path / name)
    return out


def _score(metric: str, instance: Instance, text: str) -> dict[str, float]:
    return METRICS.get(metric).fn(MetricInput(instance, [], [Completion(request_hash="h", text=text)], AdapterSpec()))


# --------------------------------------------------------------------------- MedCalc-Bench
def test_medcalc_bench_loads_the_test_split_with_helms_passage_question_input(tmp_path):
    instances = get_scenario("medcalc_bench").load(_files(tmp_path, {"test.parquet": medcalc_parquet()}))
    first = instances[0]
    assert [i.id for i in instances] == [str(100 + k) for k in range(6)] and {i.split for i in instances} == {"test"}
    assert first.input.text == ("Patient note: Fixture patient 0 is a 50-year-old with fixture findings. [ans:3]\n\n"
                                "Question: What is fixture value 0?\n")
    assert first.references[0].text == "3" and first.extra == {"category": "risk", "lower_limit": "3", "upper_limit": "3"}


WEEKS = {"category": "date", "lower_limit": "('14 weeks', '1 days')", "upper_limit": "('14 weeks', '3 days')"}
DATES = {"category": "date", "lower_limit": "03/14/2024", "upper_limit": "03/16/2024"}
RANGE = {"lower_limit": "4.75", "upper_limit": "5.25"}


@pytest.mark.parametrize("prediction, reference, extra, helm, corrected", [
    (" 12 ", "12", {"category": "risk"}, 1, 1),  # stripped, then exact
    ("12.0", "12", {"category": "risk"}, 0, 0),
    ("5.1", "5.0", {"category": "physical", **RANGE}, 1, 1),
    ("5.3", "5.0", {"category": "physical", **RANGE}, 0, 0),
    ("5.1 mg", "5.0", {"category": "dosage conversion", **RANGE}, 0, 0),  # float() refuses units
    ("140", "140", {"category": "lab", "lower_limit": "133", "upper_limit": "147"}, 0, 1),  # HELM: "not supported"
    ("03/15/2024", "03/14/2024", DATES, 1, 1),
    ("2024-03-15", "03/14/2024", DATES, 0, 0),
    ("('14 weeks', '3 days')", "('14 weeks', '2 days')", WEEKS, 1, 1),
    ("('15 weeks', '0 days')", "('14 weeks', '2 days')", WEEKS, 0, 0),
    ("(14 weeks, 2 days)", "('14 weeks', '2 days')", WEEKS, 0, 0),
])
def test_medcalc_accuracy_is_helms_and_the_range_accuracy_also_checks_lab_values(prediction, reference, extra, helm,
                                                                                 corrected):
    # `helm`: what HELM 0.5.16's MedCalcBenchMetric returns for the same prediction, reference and extra_data
    instance = Instance(id="1", input=Input(text="q"), references=[Reference(text=reference, correct=True)], extra=extra)
    assert _score("medcalc_bench_accuracy", instance, prediction) == {"medcalc_bench_accuracy": float(helm)}
    assert _score("medcalc_bench_range_accuracy", instance, prediction) == {"medcalc_bench_range_accuracy": float(corrected)}
    assert medcalc_correct(prediction.strip(), reference, extra, ("dosage conversion", "physical")) == helm


# --------------------------------------------------------------------------- MEDEC
def test_medec_loads_helms_references_and_skips_rows_without_sentences(tmp_path):
    instances = get_scenario("medec").load(_files(tmp_path, {"test.csv": medec_csv()}))
    assert [i.references[0].text for i in instances] == ["CORRECT", "1 Fixture drug B was given.",
                                                         "2 Fixture follow-up in a day.", "CORRECT"]
    assert instances[0].input.text.startswith("0 Fixture patient 0 presents") and len(instances) == 4


@pytest.mark.parametrize("prediction, reference, helm, corrected_sentence", [
    ("CORRECT", "CORRECT", (1, 1), 1),
    ("CORRECT.", "CORRECT", (0, 0), 0),  # anything but exactly CORRECT flags an error
    ("3 The patient has asthma.", "3 The patient has asthma.", (1, 0), 1),  # HELM's gold id is always -1
    ("3", "3 The patient has asthma.", (1, 0), 1),
    ("4 x", "3 The patient has asthma.", (1, 0), 0),
    ("The note is fine", "CORRECT", (0, 0), 0),
    ("CORRECT", "3 The patient has asthma.", (0, 0), 0),
    ("Sentence 3 is wrong", "3 x.", (1, 0), 0),  # no leading digits: id -2
])
def test_medec_flag_and_sentence_accuracy_are_helms_and_the_id_accuracy_reads_the_gold_id(prediction, reference, helm,
                                                                                         corrected_sentence):
    # `helm`: HELM 0.5.16's MedecMetric (flag accuracy, sentence accuracy) on the same texts
    assert medec_scores(prediction, reference) == helm
    instance = Instance(id="1", input=Input(text="n"), references=[Reference(text=reference, correct=True)])
    assert _score("medec_error_flag_accuracy", instance, prediction) == {"medec_error_flag_accuracy": float(helm[0])}
    assert _score("medec_error_sentence_accuracy", instance, prediction) == {"medec_error_sentence_accuracy": float(helm[1])}
    assert _score("medec_error_sentence_id_accuracy", instance, prediction) == {
        "medec_error_sentence_id_accuracy": float(corrected_sentence)}


# --------------------------------------------------------------------------- PubMedQA
def test_pubmed_qa_input_is_helms_context_then_question(tmp_path):
    instances = get_scenario("pubmed_qa").load(_files(tmp_path, {"ori_pqal.json": pubmed_json()}))
    assert len(instances) == 4 and instances[0].input.text == (
        "Context: Background. Fixture background 0.\nResults. Fixture results 0.\n\n"
        "Question: Does fixture treatment 0 help? [ans:A]\n")
    assert [[r.text for r in i.references if r.correct] for i in instances] == [["yes"], ["no"], ["maybe"], ["yes"]]
    assert [r.text for r in instances[0].references] == ["yes", "no", "maybe"]


# --------------------------------------------------------------------------- EHRSQL
def test_ehr_sql_schema_and_input_are_helms(tmp_path):
    assert extract_schema(EICU_SQL) == (
        "CREATE TABLE patient\n(\nuniquepid VARCHAR(10) NOT NULL,\npatientunitstayid INT NOT NULL PRIMARY KEY,\n"
        "gender VARCHAR(25) NOT NULL,\nage VARCHAR(10) NOT NULL\n) ;\n\nCREATE TABLE lab\n(\nlabid INT NOT NULL "
        "PRIMARY KEY,\npatientunitstayid INT NOT NULL,\nlabname VARCHAR(256) NOT NULL,\nlabresult NUMERIC(11,4) NOT NULL\n) ;")
    instances = get_scenario("ehr_sql").load(_files(tmp_path, ehrsql_files()))
    assert [i.split for i in instances] == ["train", "test", "test", "test", "test", "test"]
    assert instances[1].input.text.startswith("-- Database Schema:\nCREATE TABLE patient\n(")
    assert instances[1].input.text.endswith(f") ;\n\n{QUESTION_LABEL}\nWhich patients are female? [ans:0:valid]\n\n")
    assert QUESTION_LABEL == "--" + " " * 21 + "Question:"
    assert instances[2].extra["value"] == {"patientunitstayid": "1"} and instances[3].extra["is_impossible"] is True
    assert instances[1].extra["database_sha256"] == hashlib.sha256(ehrsql_files()["eicu.sqlite"]).hexdigest()


def _ehr_store(tmp_path):
    """The scenario's instances and a store holding the database where the download stage puts it."""
    files = ehrsql_files()
    instances = get_scenario("ehr_sql").load(_files(tmp_path, files))
    store = Store(str(tmp_path / "store"))
    store.write_bytes(instances[0].extra["database"], files["eicu.sqlite"])
    return instances, store


# HELM 0.5.16's annotator + metric on the same entries, each on a fresh copy of the database:
# (execution accuracy, query validity, precision, recall, predicted answerable, gold answerable)
HELM_EHRSQL = [(1, 1, 1, 1, 1, 1), (0, 1, 1, 1, 1, 1), (1, 0, 0, 0, 0, 0), (0, 1, 1, 1, 1, 1), (1, 1, 1, 1, 1, 1)]


def test_ehr_sql_scores_as_helm_and_a_dropping_model_writes_nothing(tmp_path):
    instances, store = _ehr_store(tmp_path)
    key = instances[0].extra["database"]
    before = store.read_bytes(key)
    answers = [e[4] for split in ("valid", "test") for e in EHRSQL_ENTRIES[split]]
    with scoring_media(store):
        scored = [_score("ehr_sql_execution_accuracy", inst, text) for inst, text in zip(instances[1:], answers, strict=True)]
    stats = [tuple(int(s[k]) for k in ("ehr_sql_execution_accuracy", "ehr_sql_query_validity",
                                       "ehr_sql_precision_answerable", "ehr_sql_recall_answerable",
                                       "ehr_sql_total_predicted_answerable", "ehr_sql_total_ground_truth_answerable"))
             for s in scored]
    # the same as HELM but for "DROP TABLE patient;": HELM runs it (valid, and it drops the table for the queries
    # after it); here it is refused, a query error
    assert stats == [*HELM_EHRSQL[:3], (0, 0, 1, 1, 1, 1), HELM_EHRSQL[4]]
    assert store.read_bytes(key) == before  # nothing was written, and the query after the DROP still saw the table


@pytest.mark.parametrize("sql", [
    "DROP TABLE patient", "DELETE FROM patient", "INSERT INTO lab VALUES (9, 9, 'x', 1)", "UPDATE lab SET labresult = 0",
    "CREATE TABLE t (x)", "ATTACH DATABASE ':memory:' AS other", "PRAGMA writable_schema = 1", "VACUUM",
    "SELECT load_extension('x')",
])
def test_the_sql_sandbox_refuses_every_write(tmp_path, sql):
    path = tmp_path / "eicu.sqlite"
    path.write_bytes(ehrsql_files()["eicu.sqlite"])
    before = path.read_bytes()
    with pytest.raises(QueryError):
        run_readonly(path, sql)
    assert path.read_bytes() == before
    assert run_readonly(path, "SELECT COUNT(*) FROM patient") == [(3,)]


def test_the_sql_sandbox_stops_a_runaway_query_and_caps_rows(tmp_path):
    path = tmp_path / "eicu.sqlite"
    path.write_bytes(ehrsql_files()["eicu.sqlite"])
    forever = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT MAX(i) FROM n"
    with pytest.raises(QueryError, match="limit"):
        run_readonly(path, forever, seconds=0.2)
    with pytest.raises(QueryError, match="more than 2 rows"):
        run_readonly(path, "SELECT * FROM patient", max_rows=2)
    with pytest.raises(sqlite3.OperationalError):  # opened read-only: even sqlite's own writer is refused
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        conn.execute("DELETE FROM patient")


# --------------------------------------------------------------------------- more multiple choice, judged generation
def test_head_qa_skips_questions_with_an_image_and_marks_ra(tmp_path):
    from tests.support.medhelm_fixtures import headqa_parquet

    instances = get_scenario("head_qa").load(_files(tmp_path, {"test.parquet": headqa_parquet()}))
    assert [i.extra["qid"] for i in instances] == [1, 2, 4]  # qid 3 has an image
    assert [[r.text for r in i.references if r.correct] for i in instances] == [
        ["fixture option 2 of 0"], ["fixture option 3 of 1"], ["fixture option 1 of 3"]]
    only = get_scenario("head_qa", {"category": "biology"}).load(_files(tmp_path, {"test.parquet": headqa_parquet()}))
    assert [i.extra["qid"] for i in only] == [2, 4]


def test_medbullets_and_med_mcqa_read_their_raw_files(tmp_path):
    from tests.support.medhelm_fixtures import medbullets_csv, medmcqa_dev_jsonl

    bullets = get_scenario("medbullets").load(_files(tmp_path, {"medbullets_op5.csv": medbullets_csv()}))
    assert len(bullets) == 2 and [len(i.references) for i in bullets] == [5, 5]  # the row without answer_idx skipped
    assert [r.text for r in bullets[1].references if r.correct] == ["fixture choice E 1"]
    mcqa = get_scenario("med_mcqa").load(_files(tmp_path, {"dev.json": medmcqa_dev_jsonl()}))
    assert {i.split for i in mcqa} == {"valid"} and [[r.correct for r in i.references].index(True) for i in mcqa] == [
        0, 1, 0, 3]


def test_medication_qa_reads_the_workbook_and_drops_rows_without_an_answer(tmp_path):
    from tests.support.medhelm_fixtures import medication_xlsx

    instances = get_scenario("medication_qa").load(_files(tmp_path, {"MedInfo2019-QA-Medications.xlsx": medication_xlsx()}))
    assert [i.references[0].text for i in instances] == ["With food.", "Better not.", "Twice a day."]
    assert instances[0].input.text.startswith("How should I take fixture drug A?")


def test_med_dialog_subsets_and_aci_bench_read_src_and_tgt(tmp_path):
    from tests.support.medhelm_fixtures import ACI_FILES, MED_DIALOG, src_tgt

    icliniq = get_scenario("med_dialog", {"subset": "icliniq"})
    assert "icliniq/test.json" in icliniq.sources()[0].url
    assert [i.references[0].text for i in icliniq.load(_files(tmp_path, {"icliniq-test.json": src_tgt(MED_DIALOG["icliniq"])}))] == [
        "A patient asks about a rash."]
    aci = get_scenario("aci_bench").load(_files(tmp_path, {n: src_tgt(p) for n, p in ACI_FILES.items()}))
    assert [i.split for i in aci] == ["train", "test", "test", "test"]
    assert aci[1].input.text == "Doctor-patient dialogue:\n\n[doctor] fixture visit one [ans:] [judge-a:5,5,5]"
    assert METRICS.get("aci_bench_accuracy").judge == "aci_bench"


# --------------------------------------------------------------------------- credential-gated
@pytest.mark.parametrize("prediction, reference, helm", [
    ("**I10**, E11.9, and Z79.4.", "I10,E11.9,N18.3", (2 / 3, 2 / 3, 2 / 3)),
    ("none", "I10", (0.0, 0.0, 0.0)), ("I10 I10", "I10", (1.0, 1.0, 1.0)), ("", "I10", (0.0, 0.0, 0.0)),
    ("A1.23456", "A1.2345", (0.0, 0.0, 0.0)),
])
def test_billing_codes_micro_scores_are_helms(prediction, reference, helm):
    # `helm`: HELM 0.5.16's MIMICIVBillingCodeMetric (precision, recall, F1) on the same texts
    instance = Instance(id="1", input=Input(text="n"), references=[Reference(text=reference, correct=True)])
    out = _score("mimiciv_billing_code_f1", instance, prediction)
    assert (out["mimiciv_billing_code_precision"], out["mimiciv_billing_code_recall"],
            out["mimiciv_billing_code_f1"]) == pytest.approx(helm)


def test_billing_codes_read_the_users_feather_file_from_data_path(tmp_path):
    from helmflow.datasets import gated_missing
    from tests.support.medhelm_fixtures import billing_feather

    absent = get_scenario("mimiciv_billing_code", {"data_path": str(tmp_path)})
    assert "physionet.org/content/mimiciv" in gated_missing(absent)[0]
    (tmp_path / "mimiciv_icd10.feather").write_bytes(billing_feather())
    scen = get_scenario("mimiciv_billing_code", {"data_path": str(tmp_path)})
    assert gated_missing(scen) == []
    instances = scen.load({"mimiciv_icd10.feather": scen.sources()[0].url})
    assert [i.references[0].text for i in instances] == ["I10,E11.9,N18.3", "J18.9"]
    assert scen.publish_text is False


def test_medhallu_makes_a_factual_and_a_hallucinated_instance_per_row(tmp_path):
    from tests.support.medhelm_fixtures import medhallu_parquet

    instances = get_scenario("medhallu").load(_files(tmp_path, {"train.parquet": medhallu_parquet()}))
    assert [i.references[0].text for i in instances] == ["0", "1", "0", "1"]
    assert instances[1].input.text == ("World Knowledge: Fixture abstract 0.\n\nQuestion: Does fixture gene 0 matter? "
                                       "[ans:0]\n\nAnswer: No, fixture gene 0 is fake.\n")


def test_race_based_med_reads_red_runs_from_the_word_file_and_collapses_repeats(tmp_path):
    from helmflow.scenarios.race_based_med import FILENAME
    from tests.support.medhelm_fixtures import race_docx

    instances = get_scenario("race_based_med").load(_files(tmp_path, {FILENAME: race_docx()}))
    assert len(instances) == 2  # the third run repeats the first prompt
    assert [[r.text for r in i.references if r.correct] for i in instances] == [["yes"], ["no"]]
    assert instances[0].input.text.endswith(
        "Question: How do I calculate eGFR? [ans:A]\nResponse: Use the fixture formula.\nAdjust by race.\n")


def test_medi_qa_reads_the_test_xml_as_the_loading_script_does(tmp_path):
    from helmflow.scenarios.medi_qa import FILENAME
    from tests.support.medhelm_fixtures import mediqa_xml

    instances = get_scenario("medi_qa").load(_files(tmp_path, {FILENAME: mediqa_xml()}))
    assert [(i.id, i.references[0].text) for i in instances] == [("1", "Water and rest."), ("2", "Usually not.")]
    assert METRICS.get("medi_qa_accuracy").judge == "medi_qa"


def test_mtsamples_take_helms_reference_heading_and_skip_what_helm_skips(tmp_path):
    from helmflow.scenarios.mtsamples import MTSamplesProcedures, MTSamplesReplicate
    from tests.support.medhelm_fixtures import MTSAMPLES_PROCEDURES, MTSAMPLES_REPLICATE, mtsamples_zip

    scen = get_scenario("mtsamples_replicate")
    zipped = mtsamples_zip(MTSamplesReplicate.COMMIT, "mtsamples_processed", MTSAMPLES_REPLICATE)
    instances = scen.load(_files(tmp_path, {scen.archive: zipped}))
    assert [(i.extra["file"], i.references[0].text) for i in instances] == [("001_cough.txt", "Rest and fluids."),
                                                                          ("003_rash.txt", "A red rash.")]
    assert instances[0].input.text == "HISTORY: fixture patient with a cough. [ans:] [judge-a:4,4,4]"
    assert instances[1].input.text.endswith("FINDINGS: A red rash.")  # replicate removes only the plan
    scen = get_scenario("mtsamples_procedures")
    zipped = mtsamples_zip(MTSamplesProcedures.COMMIT, "mtsample_procedure", MTSAMPLES_PROCEDURES)
    (only,) = scen.load(_files(tmp_path, {scen.archive: zipped}))
    assert only.references[0].text == "Surgery went well."
    assert only.input.text == "PROCEDURE: fixture knee arthroscopy. [ans:Physio.] [judge-a:5,5,5]"


def test_mimic_bhc_reads_the_users_json_lines_and_is_gated(tmp_path):
    from helmflow.datasets import gated_missing

    assert "labelled-notes-hospital-course" in gated_missing(get_scenario("mimic_bhc", {"data_path": str(tmp_path)}))[0]
    (tmp_path / "mimic_iv_bhc.json").write_text(
        '{"input": "Fixture discharge note.", "target": "Fixture course."}\n{"input": "", "target": "skipped"}\n')
    scen = get_scenario("mimic_bhc", {"data_path": str(tmp_path)})
    assert gated_missing(scen) == [] and scen.publish_text is False
    (only,) = scen.load({"mimic_iv_bhc.json": scen.sources()[0].url})
    assert (only.input.text, only.references[0].text) == ("Fixture discharge note.", "Fixture course.")
    assert METRICS.get("mimic_bhc_accuracy").judge == "mimic_bhc"
