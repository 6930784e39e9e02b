"""The HELM Enterprise board: Financial PhraseBank and ConvFinQA calculations read in their raw shapes
(fixtures we wrote: the zip's ISO-8859-1 ``sentence@label`` lines, ConvFinQA's JSON turns), and
`helmflow run enterprise` end to end through the CLI on mirrored fixtures of every scenario (the legal ones
from tests/test_enterprise_legal.py) against two offline models on a real Prefect server."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.scenarios.conv_fin_qa_calc import COMMIT, helm_input
from helmflow.scenarios.cti_to_mitre import CTI_COMMIT
from helmflow.scenarios.financial_phrasebank import REVISION, helm_split
from helmflow.scenarios.kpi_edgar import COMMIT as KPI_COMMIT
from tests.support.cli import run_cli
from tests.support.lite_fixtures import serve, zip_bytes
from tests.test_enterprise_legal import ECHR_MEMBERS, SUMMARIES, casehold_table
from tests.test_enterprise_scenarios import (
    ATTACK,
    KPI_DOCUMENTS,
    OPINION_TEST,
    OPINION_TRAIN,
    SUMO,
    cti_csv,
)

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
        # HELM's OSF URLs end in a slash: the test server answers a folder with its index.html
        "osf.io/download/hfn62/index.html": OPINION_TRAIN,
        "osf.io/download/q4adh/index.html": OPINION_TEST,
        "github.com/rahulOmishra/SUMO/raw/main/climate_claims_raw.xlsx": SUMO,
        f"raw.githubusercontent.com/tobideusser/kpi-edgar/{KPI_COMMIT}/data/kpi_edgar.json":
            json.dumps(KPI_DOCUMENTS).encode(),
        f"github.com/dessertlab/cti-to-mitre-with-nlp/raw/{CTI_COMMIT}/data/dataset.csv": cti_csv(),
        "github.com/mitre/cti/raw/refs/tags/ATT&CK-v10.1/enterprise-attack/enterprise-attack.json":
            json.dumps(ATTACK).encode(),
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
    with serve(_sources(tmp_path / "src")) as host:  # no Kaggle CSV is supplied: the others are mirrored
        out = run_cli("mirror", "enterprise", "--to", str(mirror), env={
            "HELMFLOW_SOURCE_HOST": host.url, "HELMFLOW_GITHUB_RAW": f"{host.url}/raw.githubusercontent.com"})
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    assert "not mirrored: gold_commodity_news: finalDataset_0208.csv is credential-gated" in text
    assert "kaggle.com/datasets/daittan" in text
    models = tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        # "A" for a multiple-choice question, "positive" otherwise
        {"name": "offline/first-or-positive", "client": "offline", "model": "first-or-positive",
         "options": {"behavior": "first_option", "answer": "positive"}},
        {"name": "offline/says-Yes", "client": "offline", "model": "says-Yes",
         "options": {"behavior": "constant", "answer": "Yes"}}]}))
    out = run_cli("run", "enterprise", "--models", "offline/first-or-positive,offline/says-Yes", "--models-file",
                  str(models), "--storage", str(storage), env={"HELMFLOW_MIRROR": str(mirror)}, timeout=600)
    # without the CSV the board leaves gold news out, saying where to get it, and runs the other nine (the
    # loader's numbers on a supplied CSV: tests/test_enterprise_scenarios.py)
    assert out.returncode == 0, out.stdout + out.stderr
    text = " ".join(out.stdout.split())
    assert "left out: gold_commodity_news: finalDataset_0208.csv is credential-gated" in text, text
    latest = json.loads((storage / "leaderboards/enterprise/latest-subset.json").read_text())
    rows = {r["deployment"]: r for r in pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()}
    first, yes = rows["offline/first-or-positive"], rows["offline/says-Yes"]
    shuffled = list(LINES)
    random.Random(121).shuffle(shuffled)
    test_labels = [line.strip().rsplit("@", 1)[1] for line in shuffled[7:]]
    assert sorted(test_labels) == ["negative", "neutral", "positive"]  # lines 6, 3 and 1 after the shuffle
    # always "positive": that label's F1 is 2 * 1 / (2 * 1 + 2 false positives) = 1/2, weighted by its support
    # 1/3; neutral and negative score 0
    assert first["financial_phrasebank"] == pytest.approx(1 / 6)
    assert yes["financial_phrasebank"] == 0.0  # "yes" is no label: nothing is predicted
    # float_equiv on the three dev turns (answers 12.5, 0.2, 12.5): neither answer has a number
    assert first["conv_fin_qa_calc"] == yes["conv_fin_qa_calc"] == 0.0
    # CaseHOLD's test rows are keyed 0, 2, 0: "A" is right twice; "Yes" is no letter
    assert first["casehold"] == pytest.approx(2 / 3)
    assert yes["casehold"] == 0.0
    # ECHR's column is its test split, as HELM's (main split test): No, Yes (the 601-word case is left out).
    # Always "yes": F1(yes) = 2 * 1 / (2 * 1 + 1 false positive) = 2/3 on support 1, F1(no) = 0: 1/3
    assert yes["echr_judgment_classification"] == pytest.approx(1 / 3)
    assert first["echr_judgment_classification"] == 0.0
    # each test summary is "they keep positive <i>": "positive" is one of its four tokens, so ROUGE-L
    # is 2 * 1 * (1/4) / (1 + 1/4) = 0.4 for every one; "Yes" shares no token with any
    assert first["legal_contract_summarization"] == pytest.approx(0.4)
    assert yes["legal_contract_summarization"] == 0.0
    # legal opinions' test labels: negative, neutral, positive
    assert first["legal_opinion_sentiment_classification"] == pytest.approx(1 / 3)
    assert yes["legal_opinion_sentiment_classification"] == 0.0
    assert "gold_commodity_news" not in first  # left out
    # KPI-EDGAR: no output names a tag, so every tag's F1 is 0
    assert first["kpi_edgar"] == yes["kpi_edgar"] == 0.0
    # SUMO test titles: "Storms", "Positive heat", "Ice melts", "Sea levels rise": "positive" scores
    # ROUGE-L 2 * 1 * (1/2) / (1 + 1/2) = 2/3 on one of four
    assert first["sumosum"] == pytest.approx(1 / 6)
    assert yes["sumosum"] == 0.0
    # CTI to MITRE: the test rows' right letters are C, E, H and A (tests/test_enterprise_scenarios.py)
    assert first["cti_to_mitre"] == pytest.approx(1 / 4)
    assert yes["cti_to_mitre"] == 0.0
    # win rates over the nine columns (a win 1, a tie 1/2): the first-option model wins six and
    # ties two (ConvFinQA, KPI-EDGAR); "Yes" wins ECHR
    assert first["mean_win_rate"] == pytest.approx((6 + 2 / 2) / 9)
    assert yes["mean_win_rate"] == pytest.approx((1 + 2 / 2) / 9)
