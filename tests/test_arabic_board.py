"""The HELM Arabic board: each Hub dataset's rows (Parquet files we wrote in its schema, with Arabic sentences of our
own) become instances as HELM's loaders build them; HELM's Arabic option letters and letter pattern, quirks
included; ALRAGE's judge parse, hand-worked; Arabic text (harakat, hamza, a presentation form) reaches the prompt
and the stored instances unnormalised; the board's 121 runs and mean tables; and `helmflow run arabic` end to end
through the CLI against a local Hub with offline models and an offline judge on a real Prefect server."""

from __future__ import annotations

import io
import json
import unicodedata
from types import SimpleNamespace

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml

from helmflow.adapters import ADAPTERS
from helmflow.metrics import METRICS, helm_stats
from helmflow.metrics.alrage import parse_alrage
from helmflow.metrics.base import MetricInput
from helmflow.records import Completion, Request, RequestBody
from helmflow.scenarios import ScenarioError, get_scenario
from tests.support.cli import run_cli
from tests.support.hub_server import HubServer

# our sentences. "مُدَرِّسَة" is typed shadda then kasra (NFC puts the kasra first); "سأل" spells its hamza as ALEF +
# HAMZA ABOVE, two code points (NFC composes them); "ﻻ" is the LAM-ALEF presentation form (NFKC splits it)
TEACHER = "\u0645\u064f\u062f\u064e\u0631\u0651\u0650\u0633\u064e\u0629"
ASKED = "\u0633\u0627\u0654\u0644"
QUESTION = f"{ASKED} الطالب {TEACHER}: ما عاصمة مصر؟ \ufefb أعرف"


def parquet(columns: dict[str, list], schema: pa.Schema | None = None) -> bytes:
    sink = io.BytesIO()
    pq.write_table(pa.table(columns, schema=schema), sink)
    return sink.getvalue()


def alghafa_file(split: str) -> bytes:
    return parquet({"query": [QUESTION, "الجملة: الطقس جميل اليوم. ما الشعور؟"],
                    "sol1": ["القاهرة", "إيجابي"], "sol2": ["الإسكندرية", "سلبي"], "sol3": ["أسوان", "محايد"],
                    "label": ["0", "1"] if split == "test" else ["2", "0"]})


def arabic_mmlu_file(split: str, math: bool = False) -> bytes:
    options = ([1.5, 0.0, 2.0, None] if math else ["الشمس", "القمر", "", None])
    return parquet({"ID": [1], "Source": ["امتحان"], "Country": ["مصر"], "Group": ["STEM"], "Subject": ["علوم"],
                    "Level": ["Primary"], "Question": [QUESTION if not math else "كم نصف ثلاثة؟"],
                    "Context": ["النص: تدور الأرض حول الشمس." if split == "test" else None],
                    **{f"Option {k}": [v] for k, v in enumerate(options, start=1)},
                    "Option 5": [None], "Answer Key": ["A"]},
                   schema=pa.schema([(n, pa.int64() if n == "ID" else pa.float64() if math and n.startswith("Option")
                                      else pa.string()) for n in ("ID", "Source", "Country", "Group", "Subject", "Level",
                                                                  "Question", "Context", "Option 1", "Option 2",
                                                                  "Option 3", "Option 4", "Option 5", "Answer Key")]))


def exams_file(split: str) -> bytes:
    return parquet({"id": [f"Biology-{split}-1", f"Physics-{split}-2", f"Biology-{split}-3"],
                    "question": ["أين تصنع النبتة غذاءها؟", "ما وحدة القوة؟", "ما وحدة الوراثة؟"],
                    "A": ["الورقة", "النيوتن", "الجين"], "B": ["الجذر", "الجول", "الخلية"], "C": ["الساق", "الواط", "النواة"],
                    "D": ["الزهرة", "الأمبير", "الدم"], "answer": ["A", "A", "E"]})


def aratrust_file() -> bytes:
    return parquet({"Question": ["هل يجوز نشر رقم هاتف صديقك دون إذنه؟", "هل الماء ضروري للحياة؟", "ما لون السماء صافيةً؟"],
                    "A": [" أ) نعم", "أ) نعم", "أ) زرقاء"], "B": ["ب)  لا ", "ب) لا", "ب) حمراء"], "C": ["ج) لا أدري", "", "ج) خضراء"],
                    "Answer": ["ب", "ا", "أ "], "Category": ["Privacy", "Physical Health", "Trustfulness"]})


def translated_file() -> bytes:
    return parquet({"question": ["ما ناتج جمع اثنين واثنين؟"], "choices": [["ثلاثة", "أربعة", "خمسة", "ستة"]],
                    "answer": [1], "subject": ["abstract_algebra"]})


def alrage_file() -> bytes:
    return parquet({"id": ["q-1"], "question": ["متى بني السد العالي؟"],
                    "candidates": [["بدأ بناء السد العالي عام 1960.", "يقع السد في أسوان."]],
                    "gold_answer": ["بدأ بناؤه عام 1960."], "source": ["كتاب"]})


def _load(tmp_path, name: str, params: dict, blobs: dict[str, bytes]):
    scen = get_scenario(name, params)
    files = {}
    for filename, data in blobs.items():
        (tmp_path / filename).write_bytes(data)
        files[filename] = str(tmp_path / filename)
    assert set(files) == {s.filename for s in scen.sources()}
    return scen, scen.load(files)


def test_alghafa_reads_the_sol_columns_and_the_zero_based_label(tmp_path):
    _, got = _load(tmp_path, "alghafa", {}, {"mcq_exams_test_ar-validation.parquet": alghafa_file("validation"),
                                             "mcq_exams_test_ar-test.parquet": alghafa_file("test")})
    assert [(i.id, i.split) for i in got] == [("id0_validation", "train"), ("id1_validation", "train"),
                                              ("id0_test", "test"), ("id1_test", "test")]
    assert [[r.correct for r in i.references] for i in got] == [[False, False, True], [True, False, False],
                                                                [True, False, False], [False, True, False]]


def test_arabic_mmlu_and_madinah_qa_read_context_options_and_the_answer_key_as_helm(tmp_path):
    _, got = _load(tmp_path, "arabic_mmlu", {}, {"Accounting_University-dev.parquet": arabic_mmlu_file("dev"),
                                                 "Accounting_University-test.parquet": arabic_mmlu_file("test")})
    assert [(i.id, i.split) for i in got] == [("train-id0", "train"), ("id0", "test")]
    assert got[0].input.text == QUESTION  # no passage: the question alone
    assert got[1].input.text == f"النص: تدور الأرض حول الشمس.\n\n{QUESTION}"
    assert [(r.text, r.correct) for r in got[1].references] == [("الشمس", True), ("القمر", False)]  # "" and null out
    # Math (Primary School): float options written as Python writes them; 0.0 is falsy, so HELM drops it
    _, math = _load(tmp_path, "arabic_mmlu", {"subset": "Math_(Primary_School)"},
                    {"Math_Primary_School-dev.parquet": arabic_mmlu_file("dev", math=True),
                     "Math_Primary_School-test.parquet": arabic_mmlu_file("test", math=True)})
    assert [r.text for r in math[1].references] == ["1.5", "2.0"]
    scen = get_scenario("madinah_qa", {"subset": "Arabic_Language_(Grammar)"})
    assert {s.url.split("@")[1].split("/", 1)[1] for s in scen.sources()} == {
        "Arabic Language (Grammar)/dev-00000-of-00001.parquet", "Arabic Language (Grammar)/test-00000-of-00001.parquet"}
    with pytest.raises(ScenarioError, match="expected text"):  # MadinahQA keeps options as they are: text
        _load(tmp_path, "madinah_qa", {"subset": "Arabic_Language_(Grammar)"},
              {"Arabic_Language_Grammar-dev.parquet": arabic_mmlu_file("dev", math=True),
               "Arabic_Language_Grammar-test.parquet": arabic_mmlu_file("test", math=True)})


def test_arabic_exams_filters_by_the_ids_subject_and_skips_unkeyed_rows(tmp_path):
    blobs = {"validation.parquet": exams_file("validation"), "test.parquet": exams_file("test")}
    _, biology = _load(tmp_path, "arabic_exams", {"subject": "Biology"}, blobs)
    assert [(i.id, i.split) for i in biology] == [("Biology-validation-1", "train"), ("Biology-test-1", "test")]
    _, everything = _load(tmp_path, "arabic_exams", {}, blobs)
    assert len(everything) == 4  # answer "E" rows are skipped
    assert [r.correct for r in everything[0].references] == [True, False, False, False]


def test_aratrust_strips_the_option_letters_and_reads_a_bare_alef_as_hamza(tmp_path):
    _, got = _load(tmp_path, "aratrust", {}, {"test.parquet": aratrust_file()})
    assert [(r.text, r.correct) for r in got[0].references] == [("نعم", False), ("لا", True), ("لا أدري", False)]
    assert [(r.text, r.correct) for r in got[1].references] == [("نعم", True), ("لا", False)]  # "ا" is "أ"; 2 options
    assert [r.correct for r in got[2].references] == [True, False, False]  # "أ " stripped
    _, health = _load(tmp_path, "aratrust", {"category": "Physical_Health"}, {"test.parquet": aratrust_file()})
    assert [i.id for i in health] == ["id1"]  # ids count every row before the category filter
    bad = parquet({"Question": ["س"], "A": ["ب) نعم"], "B": ["أ) لا"], "C": [""], "Answer": ["أ"], "Category": ["Privacy"]})
    with pytest.raises(ScenarioError, match="does not start with أ"):
        _load(tmp_path, "aratrust", {}, {"test.parquet": bad})


def test_the_translated_mmlu_and_alrage_build_helms_instances(tmp_path):
    _, mmlu = _load(tmp_path, "mbzuai_human_translated_arabic_mmlu", {},
                    {"abstract_algebra-test.parquet": translated_file()})
    assert mmlu[0].id == "id-abstract_algebra-0" and [r.correct for r in mmlu[0].references] == [False, True, False, False]
    _, alrage = _load(tmp_path, "alrage", {}, {"train.parquet": alrage_file()})
    assert alrage[0].id == "q-1" and alrage[0].split == "test"
    # HELM formats the candidates cell in an f-string: a list is written as Python writes a list
    assert alrage[0].input.text == ("السؤال:\nمتى بني السد العالي؟\n\nالسياقات المقترحة:\n"
                                    "['بدأ بناء السد العالي عام 1960.', 'يقع السد في أسوان.']\n")


def _request(mapping: dict[str, str]) -> Request:
    return Request(request_hash="h", instance_id="id0_test", split="test", output_mapping=mapping,
                   body=RequestBody(model="m", prompt="p", max_tokens=100, temperature=0.0))


def test_arabic_letters_prompt_and_helms_letter_pattern_quirks_included(tmp_path):
    scen, got = _load(tmp_path, "alghafa", {}, {"mcq_exams_test_ar-validation.parquet": alghafa_file("validation"),
                                                "mcq_exams_test_ar-test.parquet": alghafa_file("test")})
    assert unicodedata.normalize("NFC", QUESTION) != QUESTION and unicodedata.normalize("NFKC", QUESTION) != QUESTION
    spec = scen.default_adapter
    prompt = ADAPTERS.get("multiple_choice_joint").fn(spec, got[2], [])
    text = prompt.head + "".join(prompt.examples) + prompt.query
    assert text.endswith(f"السؤال: {QUESTION}\nأ. القاهرة\nب. الإسكندرية\nج. أسوان\nالإجابة:")
    assert prompt.output_mapping == {"أ": "القاهرة", "ب": "الإسكندرية", "ج": "أسوان"}
    five = got[2].model_copy(update={"references": (got[2].references * 2)[:5]})
    assert "\nد. القاهرة\nهـ. الإسكندرية\n" in ADAPTERS.get("multiple_choice_joint").fn(spec, five, []).query
    assert len("هـ") == 2  # HEH + TATWEEL, as HELM's letter
    exact = METRICS.get("exact_match").fn
    scores = {}
    for answer in ("أ", "الخيار أ", "الإجابة: ب", "A", ""):
        x = MetricInput(got[2], [_request(prompt.output_mapping)], [Completion(request_hash="h", text=answer)], spec)
        scores[answer] = exact(x)["exact_match"]
    # the first letter found anywhere counts: "الإجابة" holds JEEM, so "الإجابة: ب" picks option ج (HELM's quirk)
    assert scores == {"أ": 1.0, "الخيار أ": 1.0, "الإجابة: ب": 0.0, "A": 0.0, "": 0.0}
    x = MetricInput(got[2], [_request(prompt.output_mapping)], [Completion(request_hash="h", text="الخيار ج")], spec)
    assert exact(x)["exact_match"] == 0.0 and exact(MetricInput(
        got[3], [_request(prompt.output_mapping | {"ب": "سلبي"})], [Completion(request_hash="h", text="ب")],
        spec))["exact_match"] == 1.0


def test_arabic_text_is_stored_unnormalised(tmp_path):
    from helmflow.datasets import read_instances, store_instances
    from helmflow.storage import Store

    scen, got = _load(tmp_path, "arabic_mmlu", {}, {"Accounting_University-dev.parquet": arabic_mmlu_file("dev"),
                                                    "Accounting_University-test.parquet": arabic_mmlu_file("test")})
    plan = SimpleNamespace(key="arabic_mmlu", name=scen.name, params=scen.param_dict, scenario_version="v",
                           dataset_revision=scen.dataset_revision(), loader_version=scen.VERSION)
    store = Store(str(tmp_path / "store"))
    stored = read_instances(store, store_instances(store, plan, got))
    assert stored[0].input.text == QUESTION and stored[1].input.text.endswith(QUESTION)


@pytest.mark.parametrize(("reply", "score"), [
    ("8", 0.8), ("الدرجة 7.5 من 10", 0.75), ("12", 1.0), ("-3 ثم 4", 0.4), ("لا أعرف", 0.0), ("8/10", 0.0),
    ("\u0661\u0660", 1.0),  # Arabic-Indic "١٠": isdigit and float accept it, as in HELM
])
def test_alrage_judge_reply_parses_as_helms(reply, score):
    assert parse_alrage(reply).score == pytest.approx(score)


def test_the_board_runs_helms_121_entries_in_seven_mean_columns():
    from helmflow.plan.spec import load_board

    spec = load_board("arabic")
    assert len(spec.scenarios) == 121 and spec.aggregation == ["mean"] and spec.judges == ["openai/gpt-4o-2024-11-20"]
    groups = [e.group or e.label for e in spec.scenarios]
    assert {g: groups.count(g) for g in dict.fromkeys(groups)} == {
        "alrage": 1, "arabic_exams": 5, "mbzuai_human_translated_arabic_mmlu": 57, "alghafa": 9, "aratrust": 7,
        "arabic_mmlu": 40, "madinah_qa": 2}
    accuracy, efficiency = spec.metric_groups
    assert accuracy.aggregation == efficiency.aggregation == ["mean"]
    assert [c.scenario for c in accuracy.columns] == ["alghafa", "arabic_mmlu", "arabic_exams", "madinah_qa",
                                                      "aratrust", "alrage", "mbzuai_human_translated_arabic_mmlu"]
    assert helm_stats()["alrage_score"] == "alrage"


def test_reproduce_arabic_explains_the_judge_and_the_wording():
    out = run_cli("reproduce", "arabic", "--explain")
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "HELM: GPT-4o 2024-11-20 alone" in text and "helmflow's own Arabic sentences" in text


LABELS = ["alghafa-mcq_exams_test_ar", "arabic_mmlu-Accounting_(University)", "arabic_exams-Biology",
          "madinah_qa-Arabic_Language_(General)", "aratrust-Privacy", "alrage", "translated_mmlu-abstract_algebra"]


@pytest.mark.slow
def test_helmflow_run_arabic_end_to_end_against_the_hub(tmp_path, prefect_server):
    from helmflow.scenarios import alghafa, alrage, arabic_exams, arabic_mmlu, aratrust, madinah_qa
    from helmflow.scenarios import mbzuai_human_translated_arabic_mmlu as translated

    storage, models = tmp_path / "store", tmp_path / "models.yaml"
    models.write_text(yaml.safe_dump({"deployments": [
        {"name": "offline/alef", "client": "offline", "model": "alef",
         "options": {"behavior": "constant", "answer": "أ"}},
        {"name": "offline/judge", "client": "offline", "model": "judge", "options": {"behavior": "constant", "answer": "7"}},
    ]}))
    with HubServer(tmp_path / "hub") as hub:
        for repo, rev, path, data in [
            (alghafa.REPO, alghafa.REVISION, "mcq_exams_test_ar/validation-00000-of-00001.parquet", alghafa_file("v")),
            (alghafa.REPO, alghafa.REVISION, "mcq_exams_test_ar/test-00000-of-00001.parquet", alghafa_file("test")),
            (arabic_mmlu.REPO, arabic_mmlu.REVISION, "Accounting (University)/dev-00000-of-00001.parquet",
             arabic_mmlu_file("dev")),
            (arabic_mmlu.REPO, arabic_mmlu.REVISION, "Accounting (University)/test-00000-of-00001.parquet",
             arabic_mmlu_file("test")),
            (madinah_qa.REPO, madinah_qa.REVISION, "Arabic Language (General)/dev-00000-of-00001.parquet",
             arabic_mmlu_file("dev")),
            (madinah_qa.REPO, madinah_qa.REVISION, "Arabic Language (General)/test-00000-of-00001.parquet",
             arabic_mmlu_file("test")),
            (arabic_exams.REPO, arabic_exams.REVISION, "data/validation-00000-of-00001.parquet", exams_file("v")),
            (arabic_exams.REPO, arabic_exams.REVISION, "data/test-00000-of-00001.parquet", exams_file("test")),
            (aratrust.REPO, aratrust.REVISION, aratrust.PATH, aratrust_file()),
            (alrage.REPO, alrage.REVISION, alrage.PATH, alrage_file()),
            (translated.REPO, translated.REVISION, "abstract_algebra/test-00000-of-00001.parquet", translated_file()),
        ]:
            hub.add_file(repo, rev, path, data)
        out = run_cli("run", "arabic", "--scenarios", ",".join(LABELS), "--models", "offline/alef", "--judge",
                      "offline/judge", "--models-file", str(models), "--storage", str(storage),
                      env={"HF_ENDPOINT": hub.url, "HELMFLOW_MIRROR": ""}, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    latest = json.loads((storage / "leaderboards/arabic/latest-subset.json").read_text())
    (row,) = pq.read_table(f"{latest['uri']}/leaderboard.parquet").to_pylist()
    # "أ" picks the first option: right on AlGhafa's first test row of two, on ArabicMMLU's, MadinahQA's and
    # Biology's one test row each; wrong on AraTrust's privacy question and the translated question (keyed second);
    # the judge's "7" is ALRAGE's 0.7
    expected = {"alghafa/exact_match": 0.5, "arabic_mmlu/exact_match": 1.0, "arabic_exams/exact_match": 1.0,
                "madinah_qa/exact_match": 1.0, "aratrust/exact_match": 0.0, "alrage/alrage_score": 0.7,
                "mbzuai_human_translated_arabic_mmlu/exact_match": 0.0}
    assert {k: row[k] for k in expected} == pytest.approx(expected)
    assert row["accuracy mean"] == row["mean_score"] == pytest.approx(sum(expected.values()) / 7)
    runs = [json.loads(p.read_text()) for p in storage.glob("runs/*/run.json")]
    run = next(r for r in runs if r["scenario"]["label"] == "alghafa-mcq_exams_test_ar")
    prompts = pq.read_table(storage / "runs" / run["run_id"] / "requests.parquet")["prompt"].to_pylist()
    assert any(p.endswith(f"السؤال: {QUESTION}\nأ. القاهرة\nب. الإسكندرية\nج. أسوان\nالإجابة:") for p in prompts)
    texts = pq.read_table(storage / "runs" / run["run_id"] / "completions.parquet")["text"].to_pylist()
    assert texts == ["أ", "أ"]


def test_helms_arabic_adapter_spec_imports_with_its_letters_and_pattern():
    from helmflow.helm.tree import our_adapter
    from helmflow.scenarios.arabic import LETTERS, PATTERN

    helm = {"method": "multiple_choice_joint", "input_prefix": "السؤال: ", "output_prefix": "الإجابة: ",
            "reference_prefix_characters": LETTERS, "output_mapping_pattern": PATTERN, "max_tokens": 100}
    ours = our_adapter(helm)
    assert ours.reference_prefix_characters == LETTERS and ours.output_mapping_pattern == PATTERN
    assert get_scenario("alghafa").default_adapter.output_mapping_pattern == PATTERN
    plain = our_adapter({"method": "multiple_choice_joint", "reference_prefix_characters": None}).model_dump()
    assert "reference_prefix_characters" not in plain and "output_mapping_pattern" not in plain  # versions stay put
