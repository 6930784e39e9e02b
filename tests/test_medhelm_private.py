"""MedHELM's credential-gated and Stanford-private scenarios read from a user's folder: Stanford's shc_*_med sets,
CLEAR and MIMIC-RRS, on files written here in their real shapes (never real rows)."""

from __future__ import annotations

import csv
import io

import pytest

from helmflow.adapters import adapt
from helmflow.datasets import gated_missing
from helmflow.metrics import METRICS
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.clear import pandas_strings
from helmflow.scenarios.n2c2_ct_matching import parse_patient
from tests.support.cli import run_cli


def _csv(path, header: list[str], rows: list[list[str]]) -> None:
    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    path.write_text(buf.getvalue())


def _load(scen):
    return scen.load({s.filename: s.url for s in scen.sources()})


def test_an_shc_set_is_one_instance_per_distinct_prompt_with_the_answer_letters_as_references(tmp_path):
    scen = get_scenario("shc_med", {"dataset": "PTBM", "data_path": str(tmp_path)})
    assert "medhelm-PTBM-dataset_filtered.csv" in gated_missing(scen)[0] and scen.publish_text is False
    _csv(tmp_path / "medhelm-PTBM-dataset_filtered.csv", ["prompt", "context", "label"], [
        ["Was parent training recommended?", "Fixture note one, " + "long " * 40_000, "A"],  # past csv's field limit
        ["Was parent training recommended?", "Fixture note two.", "B"],
        ["Was parent training recommended?", "Fixture note two.", "A"],  # the same prompt: HELM keeps the last label
    ])
    assert gated_missing(scen) == []
    first, second = _load(scen)
    assert [r.text for r in first.references] == ["A", "B"] and first.references[0].correct
    assert [r.correct for r in second.references] == [True, False]  # the repeat's label, at the first's place
    assert "Question: Was parent training recommended?\nContext: Fixture note two.\n" in second.input.text
    # HELM's adapter: "Answer A or B." and an empty input noun that still writes ": "
    (prompt,) = adapt(scen.default_adapter, [second])
    assert prompt.text().startswith("Answer A or B.\n\n: ") and prompt.text().endswith("A. A\nB. B\n:")  # the last prefix right-stripped, as HELM
    assert scen.default_adapter.generation.max_tokens == 1


def test_ent_numbers_the_rows_it_keeps_skips_unlabelled_rows_and_offers_three_letters(tmp_path):
    rows = [["Refer to ENT?", "Fixture note.", "C"], ["Refer to ENT?", "Fixture note.", ""],
            ["Refer to ENT?", "Fixture note.", "C"]]
    _csv(tmp_path / "medhelm-ENT-dataset_filtered.csv", ["prompt", "context", "label"], rows)
    scen = get_scenario("shc_med", {"dataset": "ent", "data_path": str(tmp_path)})
    one, two = _load(scen)  # numbered, the two labelled rows stay apart; the empty label is not counted
    assert one.input.text.startswith("1 ") and two.input.text.startswith("2 ")
    assert [r.text for r in one.references] == ["A", "B", "C"] and one.references[2].correct
    assert scen.default_adapter.instructions == "Answer A, B or C."
    # Sequoia reads its question from "question" and numbers every row
    _csv(tmp_path / "medhelm-sequoia-dataset_filtered.csv", ["question", "context", "label"],
         [["Refer to the clinic?", "Fixture note.", "B"]])
    (only,) = _load(get_scenario("shc_med", {"dataset": "sequoia", "data_path": str(tmp_path)}))
    assert only.input.text.startswith("1 ") and "Question: Refer to the clinic?" in only.input.text


def test_an_shc_label_that_is_not_an_answer_letter_stops_the_load_and_a_template_replaces_the_prompt(tmp_path):
    _csv(tmp_path / "medhelm-CDI-dataset_filtered.csv", ["prompt", "context", "label"],
         [["Is the code supported?", "Fixture note.", "yes"]])
    with pytest.raises(ScenarioError, match="a label is 'yes', not one of A, B"):
        _load(get_scenario("shc_med", {"dataset": "cdi", "data_path": str(tmp_path)}))
    _csv(tmp_path / "medhelm-CDI-dataset_filtered.csv", ["prompt", "context", "label"],
         [["Is the code supported?", "Fixture note.", "B"]])
    scen = get_scenario("shc_med", {"dataset": "cdi", "data_path": str(tmp_path),
                                    "template": "Q: {question} / C: {context}"})
    (only,) = _load(scen)
    assert only.input.text == "Q: Is the code supported? / C: Fixture note."
    with pytest.raises(ScenarioError, match="template"):
        get_scenario("shc_med", {"dataset": "cdi", "template": "{patient}"})
    with pytest.raises(ScenarioError, match="unknown shc dataset 'abc'"):
        get_scenario("shc_med", {"dataset": "abc"})


def _xlsx(path, header: list[str], rows: list[list]) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    book.save(path)


def test_clear_reads_each_workbook_as_pandas_does_and_maps_the_labels_to_the_three_answers(tmp_path):
    pd = pytest.importorskip("pandas")
    scen = get_scenario("clear", {"condition": "chronic_pain", "data_path": str(tmp_path)})
    assert "chronic_pain.xlsx" in gated_missing(scen)[0]
    rows = [["Fixture note: back pain for years.", 1], ["Fixture note: no pain.", 0], ["Fixture note: unclear.", 2],
            [None, 1]]
    _xlsx(tmp_path / "chronic_pain.xlsx", ["text", "result_human"], rows)
    instances = _load(scen)
    # HELM: str(cell).strip() of what pandas.read_excel gives; a missing note is the text "nan", kept
    frame = pd.read_excel(tmp_path / "chronic_pain.xlsx")
    helm = [(str(r.get("text", "")).strip(), str(r.get("result_human", "")).strip()) for _, r in frame.iterrows()]
    assert helm[3] == ("nan", "1") and len(instances) == 4
    assert "Clinical note:\nnan\n" in instances[3].input.text
    correct = [next(r.text for r in i.references if r.correct) for i in instances]
    assert correct == ["Has a history of chronic pain", "Does not have a history of chronic pain", "Uncertain",
                       "Has a history of chronic pain"]
    # a label column with a missing cell is floats to pandas: "1.0" matches no answer, as in HELM
    _xlsx(tmp_path / "chronic_pain.xlsx", ["text", "result_human"], [["Fixture note A.", 1], ["Fixture note B.", None]])
    helm_labels = [str(v).strip() for v in pd.read_excel(tmp_path / "chronic_pain.xlsx")["result_human"]]
    assert pandas_strings([1, None]) == helm_labels == ["1.0", "nan"]
    first, second = _load(scen)
    assert not any(r.correct for r in first.references) and not any(r.correct for r in second.references)
    assert pandas_strings(["yes", None, 2]) == [str(v) for v in pd.Series(["yes", None, 2]).fillna("nan")]
    assert "chronic pain, B if" in scen.default_adapter.instructions  # HELM spells the condition with spaces


def test_mimic_rrs_pairs_the_line_aligned_files_skips_empty_sides_and_is_jury_scored(tmp_path):
    scen = get_scenario("mimic_rrs", {"data_path": str(tmp_path)})
    assert len(gated_missing(scen)) == 2 and "physionet.org" in gated_missing(scen)[0]
    (tmp_path / "test.findings.tok").write_text("fixture : heart size normal .\n\n  lungs clear .  \n")
    (tmp_path / "test.impression.tok").write_text("normal heart .\nskipped\nno acute disease .\n")
    one, two = _load(scen)
    assert (one.input.text, one.references[0].text) == ("fixture : heart size normal .", "normal heart .")
    assert (two.input.text, two.references[0].text) == ("lungs clear .", "no acute disease .")
    assert METRICS.get("mimic_rrs_accuracy").judge == "mimic_rrs"
    spec = scen.default_adapter
    assert (spec.input_prefix, spec.output_prefix, spec.generation.max_tokens, spec.generation.stop) == (
        "Findings:\n", "Impression:\n", 128, [])
    (tmp_path / "test.impression.tok").write_text("normal heart .\n")
    with pytest.raises(ScenarioError, match="line-aligned"):
        _load(scen)


@pytest.mark.slow
def test_the_private_board_runs_what_is_in_the_users_folders_and_names_what_is_not_in_one_line(tmp_path):
    out = run_cli("run", "medhelm-private", "--dry-run", env={"HELMFLOW_MIRROR": ""})
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1, out.stderr
    assert "every scenario it would run is credential-gated and not on this machine (26: clear-alcohol_dependence" in \
        out.stderr and "private to Stanford" in out.stderr
    out = run_cli("show", "medhelm-private", env={"HELMFLOW_MIRROR": ""})  # still described, each file's home named
    shown = " ".join(out.stdout.split())
    assert out.returncode == 0 and "left out: shc_ent_med: medhelm-ENT-dataset_filtered.csv" in shown, out.stderr
    assert "board medhelm-private: nothing it runs is on this machine (26 credential-gated scenarios left out)" in shown
    _csv(tmp_path / "medhelm-GIP-dataset_filtered.csv", ["prompt", "context", "label"],
         [["Refer to hospice?", "Fixture note.", "A"]])
    out = run_cli("show", "medhelm-private", "--data-path", f"shc_med={tmp_path}", env={"HELMFLOW_MIRROR": ""})
    assert out.returncode == 0, out.stderr
    shown = " ".join(out.stdout.split())
    assert "left out: clear-homelessness: homelessness.xlsx is credential-gated" in shown
    assert "left out: shc_ent_med" in shown and "left out: shc_gip_med" not in shown
    assert "board medhelm-private: 1 scenario x 1 model = 1 run" in shown


def test_starr_keeps_the_checked_complete_cases_with_the_discharge_instructions_as_reference(tmp_path):
    header = ["QC", "Diagnosis", "ActualProcedure", "HistoryPhysicalNoteText", "OperativeNoteText",
              "DischargeInstructionNoteText"]
    _csv(tmp_path / "dataset_cases_qc.csv", header, [
        [" true ", " Fixture hernia ", "Fixture repair", "Fixture H&P.", "Fixture op note.", "Rest for a week."],
        ["FALSE", "Fixture hernia", "Fixture repair", "Fixture H&P.", "Fixture op note.", "not checked"],
        ["TRUE", "Fixture hernia", "Fixture repair", "", "Fixture op note.", "no history"],
    ])
    scen = get_scenario("starr_patient_instructions", {"data_path": str(tmp_path)})
    (only,) = _load(scen)
    assert only.input.text == ("Diagnosis: Fixture hernia\nProcedure: Fixture repair\nHistory & Physical: Fixture H&P."
                               "\nOperative Report: Fixture op note.\n\n")
    assert only.references[0].text == "Rest for a week." and scen.publish_text is False
    assert METRICS.get("starr_patient_instructions_accuracy").judge == "starr_patient_instructions"
    assert (scen.default_adapter.input_prefix, scen.default_adapter.output_prefix) == ("Case Details: ",
                                                                                      "Patient Instructions: ")


def test_mental_health_and_chw_read_their_csvs_as_pandas_does(tmp_path):
    pytest.importorskip("pandas")
    _csv(tmp_path / "processed_dialogues.csv", ["topic", "dialogue_type", "context", "gold_counselor_response"],
         [["Anxiety", "1", "Client: I cannot sleep.", "That sounds hard."], ["Workplace", "", "Client: My boss.", "Go on."]])
    one, two = _load(get_scenario("mental_health", {"data_path": str(tmp_path)}))
    # HELM's passage-question input with an empty passage; a number column with a gap is floats to pandas
    assert one.input.text.startswith("\nQuestion: Topic: Anxiety\nType: 1.0\n\nPrevious conversation:\n"
                                     "Client: I cannot sleep.\n\n")
    assert "Type: nan\n" in two.input.text and two.references[0].text == "Go on."
    _csv(tmp_path / "CHW_Dataset.csv", ["MO Note", "other"], [["Fixture: knee pain since May.", "x"], ["", "y"]])
    scen = get_scenario("chw_care_plan", {"data_path": str(tmp_path)})
    (only,) = _load(scen)  # the row whose note pandas reads as missing is skipped
    assert only.input.text.endswith("Clinical Note:\nFixture: knee pain since May.\n")
    assert only.references[0].text == "Fixture: knee pain since May."  # the note itself, as in HELM
    (prompt,) = adapt(scen.default_adapter, [only])  # HELM: an empty noun still writes ": "
    assert prompt.text().startswith(scen.default_adapter.instructions + "\n\n: \n") and prompt.text().endswith(":")
    (tmp_path / "CHW_Dataset.csv").write_text("other\nx\n")
    with pytest.raises(ScenarioError, match="has no column MO Note"):
        _load(scen)


def _gz_csv(path, header: list[str], rows: list[list]) -> None:
    import gzip

    buf = io.StringIO(newline="")
    writer = csv.writer(buf)
    writer.writerow(header)
    writer.writerows(rows)
    path.write_bytes(gzip.compress(buf.getvalue().encode()))


def test_dischargeme_joins_the_six_tables_as_helm_and_gives_each_stay_two_instances(tmp_path):
    pytest.importorskip("pandas")
    folder = tmp_path / "files" / "discharge-me" / "1.3" / "test_phase_1"
    folder.mkdir(parents=True)
    scen = get_scenario("dischargeme", {"data_path": str(tmp_path)})
    assert len(gated_missing(scen)) == 6 and "physionet.org/content/discharge-me" in gated_missing(scen)[0]
    note = "Fixture admission. Course: fixture stay went well. Instructions: rest."
    _gz_csv(folder / "diagnosis.csv.gz", ["subject_id", "stay_id", "seq_num", "icd_code", "icd_version", "icd_title"],
            [[1, 10, 1, "R07", 10, "FIXTURE PAIN"], [1, 10, 2, "I10", 10, "FIXTURE HTN"], [2, 20, 1, "R51", 10, "X"]])
    _gz_csv(folder / "triage.csv.gz", ["subject_id", "stay_id", "temperature", "heartrate", "resprate", "o2sat", "sbp",
                                        "dbp", "pain", "acuity", "chiefcomplaint"],
            [[1, 10, 98.6, 80, 16, 99, 120, 80, "", 3, "Fixture chest pain"], [2, 20, 98, 70, 14, 98, 110, 70, 2, 2, "x"]])
    note_cols = ["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"]
    _gz_csv(folder / "discharge.csv.gz", note_cols,
            [["1-DS-1", 1, 100, "DS", 1, "2180-01-02", "2180-01-02", note]])  # subject 2 has no discharge note
    _gz_csv(folder / "radiology.csv.gz", note_cols,
            [["1-RR-1", 1, 100, "RR", 1, "2180-01-01", "", "Fixture chest film: clear."],
             ["1-RR-2", 1, 100, "RR", 2, "2180-01-01", "", "Fixture second film."]])
    _gz_csv(folder / "edstays.csv.gz", ["subject_id", "hadm_id", "stay_id", "intime", "outtime", "gender", "race",
                                         "arrival_transport", "disposition"],
            [[1, 100, 10, "2180-01-01", "2180-01-01", "F", "FIXTURE", "WALK IN", "ADMITTED"]])
    _gz_csv(folder / "discharge_target.csv.gz", ["note_id", "hadm_id", "discharge_instructions",
                                                  "brief_hospital_course", "di_len", "bhc_len"],
            [["1-DS-1", 100, "Instructions: rest.", "Course: fixture stay went well.", 3, 5]])
    bhc, di = _load(scen)  # one stay (its first joined row: the first radiology report), its two documents
    assert bhc.references[0].text == "Course: fixture stay went well." and di.references[0].text == "Instructions: rest."
    assert "Discharge Text:\nFixture admission.  Instructions: rest.\n\nRadiology Report:\nFixture chest film: clear." \
        in bhc.input.text and bhc.input.text.endswith("\n\nBrief Hospital Course:\n")
    assert "Discharge Text:\nFixture admission. Course: fixture stay went well. \n" in di.input.text
    assert di.input.text.endswith("Discharge Instructions:\n")
    assert METRICS.get("dischargeme_accuracy").judge == "dischargeme"


N2C2_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<PatientMatching>
<TEXT><![CDATA[
Record date: 2090-01-05

Fixture visit one: creatinine 1.9, above normal.



****************************************************************************************************
Record date: 2091-03-10
Fixture visit two: no surgery ever.
****************************************************************************************************

]]></TEXT>
<TAGS>
<ABDOMINAL met="not met" />
<CREATININE met="met" />
</TAGS>
</PatientMatching>
"""


def test_n2c2_lists_the_patients_files_splits_each_into_dated_notes_and_labels_the_criterion(tmp_path):
    scen = get_scenario("n2c2_ct_matching", {"subject": "CREATININE", "data_path": str(tmp_path)})
    assert [s.filename for s in scen.sources()] == ["test.xml"] and "n2c2" in gated_missing(scen)[0]
    (tmp_path / "test").mkdir()
    (tmp_path / "test" / "102.xml").write_text(N2C2_XML)
    (tmp_path / "test" / "101.xml").write_text(N2C2_XML.replace('CREATININE met="met"', 'CREATININE met="not met"'))
    (tmp_path / "test" / "notes.txt").write_text("not a patient")
    scen = get_scenario("n2c2_ct_matching", {"subject": "CREATININE", "data_path": str(tmp_path)})
    assert [s.filename for s in scen.sources()] == ["101.xml", "102.xml"] and gated_missing(scen) == []
    first, second = _load(scen)
    assert first.extra["patient_id"] == "101" and [r.correct for r in first.references] == [False, True]
    assert [r.text for r in second.references] == ["yes", "no"] and second.references[0].correct
    text = second.input.text
    # two notes (each stripped, the empty part after the last break dropped), the latest date as today
    notes, labels = parse_patient(N2C2_XML.replace("one:", "one:\n\n\n\nnext").encode(), "fixture")
    assert notes == ["Record date: 2090-01-05\n\nFixture visit one:\n\nnext creatinine 1.9, above normal.",
                     "Record date: 2091-03-10\nFixture visit two: no surgery ever."]  # "\n\n\n" -> "\n" once, as HELM
    assert labels == {"ABDOMINAL": 0, "CREATININE": 1}
    assert "## Note #1\nDate: 2090-01-05\nRecord date: 2090-01-05\n\nFixture visit one:" in text
    assert "\n" + "*" * 50 + "\n\n## Note #2\nDate: 2091-03-10\n" in text and "2 clinical notes" in text
    assert "Take today's date to be 2091-03-10." in text and text.endswith('meet the criterion "CREATININE"?')
    scen = get_scenario("n2c2_ct_matching", {"subject": "HBA1C", "data_path": str(tmp_path)})
    with pytest.raises(ScenarioError, match="no HBA1C criterion"):
        _load(scen)
    (tmp_path / "test" / "103.xml").write_text("<PatientMatching><TEXT>unclosed")
    with pytest.raises(ScenarioError, match="not readable XML"):
        _load(get_scenario("n2c2_ct_matching", {"subject": "CREATININE", "data_path": str(tmp_path)}))
