"""The HELM Enterprise board: Financial PhraseBank and ConvFinQA calculations read in their raw shapes
(fixtures we wrote: the zip's ISO-8859-1 ``sentence@label`` lines, ConvFinQA's JSON turns), and
`helmflow run enterprise` end to end through the CLI on mirrored fixtures of every scenario (the legal ones
from tests/test_enterprise_legal.py) against three offline models on a real Prefect server."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.scenarios.conv_fin_qa_calc import COMMIT, helm_input
from helmflow.scenarios.financial_phrasebank import REVISION, helm_split
from tests.support.cli import run_cli
from tests.support.lite_fixtures import serve, zip_bytes
from tests.test_enterprise_legal import ECHR_MEMBERS, SUMMARIES, casehold_table

SENTENCES = [("Operating profit rose to EUR 13.1 mn from EUR 8.7 mn.", "positive"),
             ("The company cut its outlook.", "negative"),
             ("Net sales fell by 5 % to £ 20 mn.", "negative"),  # £ is one ISO-8859-1 byte
             ("Ståhlberg will chair the board.", "neutral"),
             ("Orders grew strongly in the quarter.", "positive"),
             ("The loss widened to EUR 2 mn.", "negative"),
             ("Shares jumped 10 %.", "positive"),
             ("Profit doubled.", "positive"),
             ("Sales were flat.", "neutral"),
             ("Revenue @ the unit rose.", "positive")]  # an '@' in the sentence: the label is after the last
LINES = [f"{s}@{label}\r\n" for s, label in SENTENCES]


def _turn(answers: list[float], facts: dict[str, str]) -> dict:
    return {"table": [["", "2019", "2018"], ["revenue", "$ 120", "$ 100"]],
            "annotation": {"cur_dial": [f"question {i}?" for i in range(len(answers))],
                           "exe_ans_list": answers, "exe_ans": answers[-1], **facts}}


TRAIN = [_turn([20.0], {"gold_inds": {"table_1": "revenue was 120", "text_2": "Revenue grew."}})] * 2
DEV = [_turn([120.0, 12.5], {"gold_ind": {"text_1": "In 2019 ", "text_3": "revenue grew."}}),
       _turn([0.2], {}), _turn([12.5], {})]


def test_phrasebank_splits_as_helm_after_its_seeded_shuffle():
    shuffled = list(LINES)
    random.Random(121).shuffle(shuffled)  # HELM's rule: Random(121).shuffle, the first 70% train
    rows = helm_split(LINES)
    assert [(s, lab) for s, lab, _ in rows] == [tuple(line.strip().rsplit("@", 1)) for line in shuffled]
    assert [split for *_, split in rows] == ["train"] * 7 + ["test"] * 3
    assert ("Revenue @ the unit rose.", "positive") in [(s, lab) for s, lab, _ in rows]


def test_conv_fin_qa_input_is_helms_table_text_and_dialogue():
    assert helm_input(DEV[0]) == ("Table: \n|  | 2019 | 2018 |\n| revenue | $ 120 | $ 100 |\n\n"
                                  "Text: \nIn 2019 revenue grew.\n\n"
                                  "Question: question 0?\nAnswer: 120.0\nQuestion: question 1?")
    assert "Text:" not in helm_input(DEV[1])


def test_reproduce_enterprise_says_helm_ships_no_conf():
    out = run_cli("reproduce", "enterprise", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "HELM ships no run_entries conf for Enterprise" in text and "at most 1000 instances" in text


def _sources(root):
    files = {
        f"huggingface.co/datasets/takala/financial_phrasebank/resolve/{REVISION}/data/FinancialPhraseBank-v1.0.zip":
            zip_bytes({"FinancialPhraseBank-v1.0/Sentences_50Agree.txt": "".join(LINES).encode("iso-8859-1"),
                       "FinancialPhraseBank-v1.0/Sentences_AllAgree.txt": b"x@neutral\r\n"}),
        f"github.com/czyssrs/ConvFinQA/raw/{COMMIT}/data.zip":
            zip_bytes({"data/train_turn.json": json.dumps(TRAIN).encode(), "data/dev_turn.json": json.dumps(DEV).encode()}),
        "archive.org/download/ECHR-ACL2019/ECHR_Dataset.zip": zip_bytes(ECHR_MEMBERS),
        "raw.githubusercontent.com/lauramanor/legal_summarization/master/all_v1.json": json.dumps(SUMMARIES).encode(),
    }
    casehold = "huggingface.co/datasets/casehold/casehold/resolve/refs/convert/parquet/all"
    for split, rows in {"train": [(1, "cite", "3")], "test": [(2, "cite", "0"), (3, "cite", "2"), (4, "cite", "0")]}.items():
        sink = pa.BufferOutputStream()
        pq.write_table(casehold_table(rows), sink)
        files[f"{casehold}/{split}/0000.parquet"] = sink.getvalue().to_pybytes()
    for path, data in files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root


@pytest.mark.slow
def test_helmflow_run_enterprise_end_to_end_on_mirrored_fixtures(tmp_path, prefect_server):
    mirror, storage = tmp_path / "mirror", tmp_path / "store"
    with serve(_sources(tmp_path / "src")) as host:
        out = run_cli("mirror", "enterprise", "--to", str(mirror), env={"HELMFLOW_SOURCE_HOST": host.url})
    assert out.returncode == 0, out.stdout + out.stderr
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "offline/says-positive", "client": "offline", "model": "says-positive",
         "options": {"behavior": "constant", "answer": "positive"}},
        {"name": "offline/says-Yes", "client": "offline", "model": "says-Yes",
         "options": {"behavior": "constant", "answer": "Yes"}},
        # "A" for a multiple-choice question, "12.5" otherwise
        {"name": "offline/first-or-12.5", "client": "offline", "model": "first-or-12.5",
         "options": {"behavior": "first_option", "answer": "12.5"}}]}))
    out = run_cli("run", "enterprise", "--models", "offline/says-positive,offline/says-Yes,offline/first-or-12.5",
                  "--models-file", str(models), "--storage", str(storage), env={"HELMFLOW_MIRROR": str(mirror)},
                  timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/enterprise/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    positive, yes, first = rows["offline/says-positive"], rows["offline/says-Yes"], rows["offline/first-or-12.5"]
    shuffled = list(LINES)
    random.Random(121).shuffle(shuffled)
    test_labels = [line.strip().rsplit("@", 1)[1] for line in shuffled[7:]]
    assert sorted(test_labels) == ["negative", "neutral", "positive"]  # lines 6, 3 and 1 after the shuffle
    # always "positive": that label's F1 is 2 * 1 / (2 * 1 + 2 false positives) = 1/2, weighted by its support
    # 1/3; neutral and negative score 0
    assert positive["financial_phrasebank"] == pytest.approx(1 / 6)
    assert first["financial_phrasebank"] == yes["financial_phrasebank"] == 0.0  # no label: nothing is predicted
    # float_equiv on the three dev turns (answers 12.5, 0.2, 12.5)
    assert first["conv_fin_qa_calc"] == pytest.approx(2 / 3)
    assert first["conv_fin_qa_calc/float_equiv"] == pytest.approx(2 / 3)
    assert positive["conv_fin_qa_calc"] == yes["conv_fin_qa_calc"] == 0.0
    # CaseHOLD's test rows are keyed 0, 2, 0: "A" is right twice; the constant answers are no letter
    assert first["casehold"] == pytest.approx(2 / 3)
    assert positive["casehold"] == yes["casehold"] == 0.0
    # ECHR's column is its test split, as HELM's (main split test): No, Yes (the 601-word case is left out).
    # Always "yes": F1(yes) = 2 * 1 / (2 * 1 + 1 false positive) = 2/3 on support 1, F1(no) = 0: 1/3
    assert yes["echr_judgment_classification"] == pytest.approx(1 / 3)
    assert positive["echr_judgment_classification"] == first["echr_judgment_classification"] == 0.0
    # each test summary is "they keep positive <i>": "positive" is one of its four tokens, so ROUGE-L
    # is 2 * 1 * (1/4) / (1 + 1/4) = 0.4 for every one; "Yes" and "12.5" share no token with any
    assert positive["legal_contract_summarization"] == pytest.approx(0.4)
    assert yes["legal_contract_summarization"] == first["legal_contract_summarization"] == 0.0
    # win rates, column by column (a win counts 1, a tie 1/2, over the two others):
    # phrasebank 1, 1/4, 1/4; convfinqa 1/4, 1/4, 1; casehold 1/4, 1/4, 1; echr 1/4, 1, 1/4; summaries 1, 1/4, 1/4
    assert positive["mean_win_rate"] == pytest.approx((1 + 1 / 4 + 1 / 4 + 1 / 4 + 1) / 5)
    assert yes["mean_win_rate"] == pytest.approx((1 / 4 + 1 / 4 + 1 / 4 + 1 + 1 / 4) / 5)
    assert first["mean_win_rate"] == pytest.approx((1 / 4 + 1 + 1 + 1 / 4 + 1 / 4) / 5)
