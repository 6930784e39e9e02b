"""HELM Enterprise's finance, climate and cyber scenarios read in their raw shapes (fixtures we wrote): the OSF
and SUMO Excel workbooks, the Kaggle gold-news CSV (supplied by the user), KPI-EDGAR's documents JSON,
CTI-to-MITRE's CSV with an ATT&CK bundle; and the KPI-EDGAR metric worked by hand (checked against
crfm-helm 0.5.16's ``_compute_stats`` on the same pairs)."""

from __future__ import annotations

import csv
import io
import json
import random

import pytest

from helmflow.metrics import METRICS
from helmflow.metrics.kpi_edgar import adjusted_macro_f1, helm_adjusted_macro_f1, instance_counts, word_macro_f1
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.base import pandas_sample_split
from helmflow.scenarios.cti_to_mitre import options
from helmflow.scenarios.gold_commodity_news import CATEGORIES, helm_train_rows


def xlsx_bytes(rows: list[list]) -> bytes:
    openpyxl = pytest.importorskip("openpyxl")
    book = openpyxl.Workbook()
    for row in rows:
        book.active.append(row)
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


OPINION_TRAIN = xlsx_bytes([["Phrase", "Label"], ["The court affirmed the judgment.", 0], [None, None],
                            ["The appeal is frivolous.", 1], ["The hearing was held on May 2.", 2]])
OPINION_TEST = xlsx_bytes([["sentence", "label"], ["Counsel acted in bad faith.", 1], ["The motion was filed.", 2],
                           ["The ruling was fair.", 0]])


def article(words: int, mark: str) -> str:
    return " ".join([f"{mark}{i}" for i in range(words)])


SUMO = xlsx_bytes([
    ["climate claims"],  # the first row: skipped (read_excel's skiprows=1)
    ["Claim_id", "Claim", "Title", "Doc_text", "Label"],
    [1, "c1", "Sea  levels\nrise", article(120, "a"), True],
    [2, "c2", None, article(120, "b"), True],  # no title: dropped
    [3, "c3", "Ice melts", article(150, "c") + "_x000D_", False],
    [4, "c4", "Short", article(50, "d"), True],  # under 100 words: dropped from test
    [5, "c5", "Storms", article(110, "e"), True],
    [6, "c6", "Positive heat", article(130, "f"), True],
])


def gold_csv(labels: list[int]) -> bytes:
    columns = ["Dates", "URL", "News", *(column for column, _ in CATEGORIES.values())]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    for i, label in enumerate(labels):
        writer.writerow(["28-01-2016", f"http://news/{i}", f"gold headline {i}", label, *([0] * 8)])
    return out.getvalue().encode()


GOLD_LABELS = [1, 0, 1, 1, 0, 0, 1, 0, 1, 0]  # row 6 is train (random.Random(0).sample(range(10), 1) == [6])


def kpi_sentence(split: str | None, words: list[str], entities: list[tuple[str, int, int]]) -> dict:
    return {"id_sentence": "s", "split_type": split, "words": [{"value": w} for w in words],
            "entities_anno": [{"type_": t, "start": s, "end": e, "value": " ".join(words[s:e])} for t, s, e in entities],
            "relations_anno": []}


KPI_DOCUMENTS = [
    {"id_": "doc1", "segments": [
        {"id_": "seg1", "sentences": [
            kpi_sentence("train", ["Revenue", "was", "$", "5", "[", "net", "]"], [("kpi", 0, 1), ("cy", 3, 4)]),
            kpi_sentence(None, ["Skipped", "5"], [("kpi", 0, 1)]),  # no split: left out
            kpi_sentence("test", ["Nothing", "here"], [("increase", 0, 1)]),  # no known tag: left out
        ]},
        {"id_": "seg2", "sentences": None},
    ]},
    {"id_": "doc2", "segments": [{"id_": "seg3", "sentences": [
        kpi_sentence("valid", ["Cost", "[", "a", "]", "fell", "to", "3", "from", "4"],
                     [("kpi", 0, 4), ("cy", 6, 7), ("py", 8, 9)]),
        kpi_sentence("test", ["Sales", "of", "7"], [("kpi", 0, 1), ("py1", 2, 3)]),
    ]}]},
]


def attack_pattern(tid: str, name: str, sub: bool | None = False) -> dict:
    o = {"type": "attack-pattern", "name": name, "external_references": [
        {"source_name": "mitre-attack", "external_id": tid}, {"source_name": "capec", "external_id": "CAPEC-1"}]}
    if sub is not None:
        o["x_mitre_is_subtechnique"] = sub
    return o


TECHNIQUES = [(f"T10{i:02d}", f"Technique {i}") for i in range(12)]
ATTACK = {"type": "bundle", "objects": [
    {"type": "x-mitre-tactic", "name": "Execution"},
    *(attack_pattern(t, n) for t, n in TECHNIQUES),
    attack_pattern("T1000.001", "A sub-technique", sub=True),
    attack_pattern("T1999", "Says nothing", sub=None),  # no x_mitre_is_subtechnique: left out, as HELM does
]}
CTI_ROWS = [(f"situation {i}", TECHNIQUES[i % 12][0]) for i in range(13)]


def cti_csv() -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["sentence", "label_tec", "label_subtec", "tec_name"])
    writer.writerows([[s, t, f"{t}.001", "name"] for s, t in CTI_ROWS])
    return out.getvalue().encode()


def _write(tmp_path, files: dict[str, bytes]) -> dict[str, str]:
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    return {name: str(tmp_path / name) for name in files}


def test_legal_opinion_labels_index_helms_class_list_and_blank_rows_are_left_out(tmp_path):
    files = _write(tmp_path, {"train.xlsx": OPINION_TRAIN, "test.xlsx": OPINION_TEST})
    instances = get_scenario("legal_opinion_sentiment_classification").load(files)
    assert [(i.split, i.input.text, i.references[0].text) for i in instances] == [
        ("train", "The court affirmed the judgment.", "positive"), ("train", "The appeal is frivolous.", "negative"),
        ("train", "The hearing was held on May 2.", "neutral"), ("test", "Counsel acted in bad faith.", "negative"),
        ("test", "The motion was filed.", "neutral"), ("test", "The ruling was fair.", "positive")]
    _write(tmp_path, {"test.xlsx": xlsx_bytes([["sentence", "label"], ["x", 3]])})
    with pytest.raises(ScenarioError, match="row 2: label 3 is not 0, 1 or 2"):
        get_scenario("legal_opinion_sentiment_classification").load(files)
    _write(tmp_path, {"test.xlsx": b"not a workbook"})
    with pytest.raises(ScenarioError, match="is not a readable .xlsx workbook"):
        get_scenario("legal_opinion_sentiment_classification").load(files)


def test_sumosum_splits_as_helm_and_keeps_test_articles_of_100_to_3700_words(tmp_path):
    files = _write(tmp_path, {"climate_claims_raw.xlsx": SUMO})
    # five rows with a title; pandas' split: permutation(5)[:1] = [2] is train, the rest [0, 1, 3, 4] in the
    # order permutation(4) = [2, 3, 1, 0] gives: rows 3, 4, 1, 0 (claims 5, 6, 3, 1; claim 4 has 50 words)
    assert pandas_sample_split(5, 0.2, 0) == ([2], [3, 4, 1, 0])
    instances = get_scenario("sumosum").load(files)
    assert [(i.split, i.references[0].text) for i in instances] == [
        ("train", "Short"), ("test", "Storms"), ("test", "Positive heat"), ("test", "Ice melts"),
        ("test", "Sea levels rise")]
    assert instances[3].input.text == article(150, "c")  # the _x000D_ escape is removed
    assert len(get_scenario("sumosum", {"test_filter_min_length": None}).load(files)) == 5


def test_gold_news_moves_a_tenth_to_train_and_says_where_to_get_the_csv(tmp_path):
    assert helm_train_rows(10) == {6} and helm_train_rows(9) == set()
    ours = random.Random(0)
    assert helm_train_rows(57) == set(ours.sample(range(57), k=5))
    files = _write(tmp_path, {"finalDataset_0208.csv": gold_csv(GOLD_LABELS)})
    instances = get_scenario("gold_commodity_news", {"category": "price_or_not"}).load(files)
    assert [i.references[0].text for i in instances] == ["Yes" if x else "No" for x in GOLD_LABELS]
    assert [i.split for i in instances].count("train") == 1 and instances[6].split == "train"
    other = get_scenario("gold_commodity_news", {"category": "direction_up"}).load(files)
    assert {i.references[0].text for i in other} == {"No"}
    with pytest.raises(ScenarioError, match="category"):
        get_scenario("gold_commodity_news", {"category": "silver"})


def test_kpi_edgar_sentences_become_tagged_phrase_references(tmp_path):
    files = _write(tmp_path, {"kpi_edgar.json": json.dumps(KPI_DOCUMENTS).encode()})
    instances = get_scenario("kpi_edgar").load(files)
    assert [(i.split, i.references[0].text) for i in instances] == [
        ("train", "Revenue [kpi], 5 [cy]"), ("valid", "Cost ( a ) [kpi], 3 [cy], 4 [py]"),
        ("test", "Sales [kpi], 7 [py1]")]
    assert instances[0].input.text.splitlines()[0] == "Context: Revenue was $ 5 ( net )"
    assert "py1:" in instances[0].input.text


def test_kpi_edgar_metric_worked_by_hand_is_helms_and_the_corrected_one():
    pairs = [("284 [cy], total unrecognized compensation cost [kpi]", "284 [cy], unrecognized cost [kpi], 2019 [py]"),
             ("revenue [kpi]", "revenue growth [kpi], 5 [revenue]")]  # an unknown tag is ignored
    sums: dict[str, float] = {}
    for gold, pred in pairs:
        for k, v in instance_counts(gold, pred).items():
            sums[k] = sums.get(k, 0.0) + v
    # kpi: overlap 2 + 1, completion words 2 + 2, reference words 4 + 1; cy: 1, 1, 1; py: 0, 1, 0; py1: nothing
    assert sums["kpi_edgar:overlap:kpi"] == 3 and sums["kpi_edgar:pred:kpi"] == 4 and sums["kpi_edgar:gold:kpi"] == 5
    # word F1: kpi 2 * 3 / (4 + 5) = 2/3, cy 1, py 0, py1 0
    assert word_macro_f1(sums) == pytest.approx((2 / 3 + 1) / 4)
    # corrected: kpi tp 3/5, fn 2/5, fp 1/4 -> 1.2 / 1.85 = 24/37; cy 1; py: fp 1 -> 0
    assert adjusted_macro_f1(sums) == pytest.approx((24 / 37 + 1) / 4)
    # HELM's (completion read as gold): kpi tp 3/4, fn 1/4, fp 2/5 -> 1.5 / 2.15 = 30/43; crfm-helm 0.5.16 gives
    # 0.42441860465116277 for these pairs
    assert helm_adjusted_macro_f1(sums) == pytest.approx((30 / 43 + 1) / 4) == pytest.approx(0.42441860465116277)
    assert helm_adjusted_macro_f1({}) is None
    assert METRICS.get("kpi_edgar").helm.stats == ("word_macro_f1_score", "adjusted_macro_f1_score")


def test_cti_to_mitre_draws_helms_options_with_one_seeded_random(tmp_path):
    files = _write(tmp_path, {"dataset.csv": cti_csv(), "enterprise-attack.json": json.dumps(ATTACK).encode()})
    instances = get_scenario("cti_to_mitre").load(files)
    names = [n for _, n in TECHNIQUES]
    train, test = pandas_sample_split(13, 0.7, 42)
    assert [i.id for i in instances] == [f"id{p}" for p in train + test] and len(train) == 9
    rng = random.Random(42)  # HELM's rule, by hand: sample 8 wrong names, add the right one, shuffle, Others
    for instance, position in zip(instances, train + test, strict=True):
        correct = TECHNIQUES[position % 12][1]
        picked = [(n, False) for n in rng.sample([n for n in names if n != correct], 8)] + [(correct, True)]
        rng.shuffle(picked)
        assert [(r.text, r.correct) for r in instance.references] == [*picked, ("Others", False)]
    assert options(random.Random(0), 2, "x", ["x", "y"]) == [("x", True), ("Others", False)]
    # the test rows' right options are at letters C, E, H and A (the board test's first-option model: 1/4)
    assert [[r.correct for r in i.references].index(True) for i in instances if i.split == "test"] == [2, 4, 7, 0]
    bad = cti_csv().replace(b"T1000,", b"T4242,")
    _write(tmp_path, {"dataset.csv": bad})
    with pytest.raises(ScenarioError, match="technique 'T4242' is not in"):
        get_scenario("cti_to_mitre").load(files)
