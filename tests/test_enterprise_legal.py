"""HELM Enterprise's legal scenarios read in their raw shapes (fixtures we wrote): CaseHOLD's Parquet rows,
ECHR's one-JSON-file-per-case zip, the contract summaries' JSON object of records; HELM's pandas split
worked by hand and checked against pandas itself."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.base import pandas_sample_split
from helmflow.scenarios.echr_judgment_classification import helm_word_count
from tests.support.lite_fixtures import zip_bytes


def casehold_table(rows: list[tuple[int, str, str]]) -> pa.Table:
    """(example_id, citing prompt, label) rows; holding i of row n reads ``holding n.i``."""
    return pa.table({"example_id": [r[0] for r in rows], "citing_prompt": [r[1] for r in rows],
                     **{f"holding_{i}": [f"holding {r[0]}.{i}" for r in rows] for i in range(5)},
                     "label": [r[2] for r in rows]})


def echr_case(item: str, text: list[str], violated: list[str]) -> bytes:
    return json.dumps({"ITEMID": item, "LANGUAGEISOCODE": "ENG", "RESPONDENT": "GBR", "BRANCH": "CHAMBER",
                       "DATE": 2001, "DOCNAME": f"CASE OF {item}", "IMPORTANCE": "4", "CONCLUSION": "",
                       "JUDGES": "", "TEXT": text, "VIOLATED_ARTICLES": violated,
                       "VIOLATED_PARAGRAPHS": [f"{a}-1" for a in violated], "VIOLATED_BULLETPOINTS": [],
                       "NON_VIOLATED_ARTICLES": [], "NON_VIOLATED_PARAGRAPHS": [],
                       "NON_VIOLATED_BULLETPOINTS": []}).encode()


ECHR_MEMBERS = {
    "EN_train/001-2.json": echr_case("001-2", ["1. The applicant was detained.", "2. No appeal lay."], ["5"]),
    "EN_train/001-1.json": echr_case("001-1", ["1. The applicant complained of delay."], []),
    "EN_dev/001-3.json": echr_case("001-3", ["1. The hearing was not public."], ["6"]),
    "EN_test/001-5.json": echr_case("001-5", ["1. The property was taken."], ["1"]),
    "EN_test/001-4.json": echr_case("001-4", ["1. The complaint was examined."], []),
    "EN_test/001-6.json": echr_case("001-6", ["word " * 600], ["3"]),  # 601 pieces: over HELM's 600
    "EN_test/README.txt": b"not a case",
}


def summary_record(uid: str, text: str, summary: str | None) -> dict:
    return {"doc": f"{uid}.txt", "id": uid, "original_text": text, "reference_summary": summary,
            "title": "terms", "uid": uid}


SUMMARIES = {  # five complete records (one of them with a newline to clean) and one without a summary
    f"legalsum0{i}": summary_record(f"legalsum0{i}", f"Section {i}.\n  The  user agrees.", f"they keep positive {i}")
    for i in range(5)
} | {"legalsum09": summary_record("legalsum09", "No summary here.", None)}


def test_pandas_sample_split_is_helms_worked_by_hand_and_matches_pandas():
    # RandomState(0).permutation(5) = [2, 0, 1, 3, 4]: train is row 2; the rest [0, 1, 3, 4] reordered by
    # RandomState(0).permutation(4) = [2, 3, 1, 0]
    assert pandas_sample_split(5, 0.2, 0) == ([2], [3, 4, 1, 0])
    pd = pytest.importorskip("pandas")
    for count, frac, seed in [(5, 0.2, 0), (12, 0.2, 0), (17, 0.7, 42), (3, 0.7, 42), (1, 0.2, 0)]:
        df = pd.DataFrame({"row": range(count)})
        train = df.sample(frac=frac, random_state=seed)
        test = df.drop(train.index).sample(frac=1, random_state=seed)
        assert pandas_sample_split(count, frac, seed) == (train.row.tolist(), test.row.tolist())


def test_casehold_rows_become_five_option_instances(tmp_path):
    files = {}
    for split, rows in {"train": [(7, "cite A", "1")], "test": [(11, "cite B", "0"), (12, "cite C", "4")]}.items():
        pq.write_table(casehold_table(rows), tmp_path / f"{split}.parquet")
        files[f"{split}.parquet"] = str(tmp_path / f"{split}.parquet")
    instances = get_scenario("casehold").load(files)
    assert [(i.id, i.split, i.input.text) for i in instances] == [
        ("id7", "train", "cite A"), ("id11", "test", "cite B"), ("id12", "test", "cite C")]
    assert [r.text for r in instances[2].references] == [f"holding 12.{i}" for i in range(5)]
    assert [[r.correct for r in i.references].index(True) for i in instances] == [1, 0, 4]
    pq.write_table(casehold_table([(1, "x", "5")]), tmp_path / "test.parquet")
    with pytest.raises(ScenarioError, match="label '5' is not 0-4"):
        get_scenario("casehold").load(files)


def test_echr_cases_are_yes_when_an_article_was_violated_and_long_cases_are_left_out(tmp_path):
    assert helm_word_count("word " * 600) == 601  # the trailing separator leaves an empty last piece
    assert helm_word_count("A b, c.") == 4
    (tmp_path / "ECHR_Dataset.zip").write_bytes(zip_bytes(ECHR_MEMBERS))
    files = {"ECHR_Dataset.zip": str(tmp_path / "ECHR_Dataset.zip")}
    instances = get_scenario("echr_judgment_classification").load(files)
    assert [(i.id, i.split, i.references[0].text) for i in instances] == [
        ("train-001-1", "train", "No"), ("train-001-2", "train", "Yes"), ("valid-001-3", "valid", "Yes"),
        ("test-001-4", "test", "No"), ("test-001-5", "test", "Yes")]
    assert instances[1].input.text == "1. The applicant was detained. 2. No appeal lay."
    everything = get_scenario("echr_judgment_classification", {"filter_max_length": None}).load(files)
    assert [i.id for i in everything][-1] == "test-001-6"
    (tmp_path / "ECHR_Dataset.zip").write_bytes(zip_bytes({"EN_dev/001-9.json": b'{"TEXT": ["x"]}'}))
    with pytest.raises(ScenarioError, match="001-9.json is not an ECHR case"):
        get_scenario("echr_judgment_classification").load(files)


def test_contract_summaries_split_as_helm_and_clean_whitespace(tmp_path):
    (tmp_path / "all_v1.json").write_text(json.dumps(SUMMARIES))
    instances = get_scenario("legal_contract_summarization").load({"all_v1.json": str(tmp_path / "all_v1.json")})
    # the record without a summary is dropped; of the five, row 2 is train, then rows 3, 4, 1, 0 (see above)
    assert [(i.id, i.split) for i in instances] == [
        ("legalsum02", "train"), ("legalsum03", "test"), ("legalsum04", "test"), ("legalsum01", "test"),
        ("legalsum00", "test")]
    assert instances[0].input.text == "Section 2. The user agrees."
    assert instances[0].references[0].text == "they keep positive 2"
