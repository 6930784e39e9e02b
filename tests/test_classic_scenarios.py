"""HELM Classic's own scenarios on fixture files in the upstream shapes: HELM's instance order, ids, splits,
inputs and references (asserted against independent re-computations of HELM's rules, written out again
here, or HELM's own pandas call), its evaluation sample, the contrast-set perturbation, and bad input."""

from __future__ import annotations

import csv
import io
import json
import zipfile
from random import Random

import numpy as np
import pytest

from helmflow.perturbations import PERTURBATIONS, resolve
from helmflow.pipeline import adapt_scenario, download_scenario
from helmflow.plan.compile import plan_scenario
from helmflow.plan.spec import ScenarioEntry
from helmflow.records import Input, Instance, Reference, prompt_from_row
from helmflow.scenarios import ScenarioError, get_scenario
from helmflow.scenarios.raft import helm_split
from helmflow.scenarios.truthful_qa import helm_options
from helmflow.storage import Store
from tests.support.classic_fixtures import (
    BOOLQ,
    CIVIL,
    CONTRAST,
    HELLASWAG,
    IDENTITIES,
    IMDB_ORDER,
    LSAT,
    QUAC,
    RAFT_SETTINGS,
    TRUTHFUL_QA,
    WIKIFACT,
    babi_archive,
    babi_text,
    blimp_zip,
    boolq_files,
    civil_csv,
    hellaswag_files,
    imdb_files,
    legal_support_zip,
    lsat_files,
    quac_files,
    raft_parquet,
    raft_settings,
    truthful_qa_csv,
    twitter_aae_csv,
    wikifact_files,
)


def write(tmp_path, files: dict[str, bytes]) -> dict[str, str]:
    """The fixture files by their base names, as the data path hands them to ``load``."""
    out = {}
    for path, data in files.items():
        name = path.rsplit("/", 1)[-1]
        (tmp_path / name).write_bytes(data)
        out[name] = str(tmp_path / name)
    return out


# --------------------------------------------------------------------------- BoolQ
def helm_boolq(files: dict[str, bytes], only_contrast: bool) -> list[tuple[str, str, str, list]]:
    """HELM's BoolQScenario.get_instances, written out again: (split, input, answer, contrast inputs)."""
    contrast = {}
    for item in json.loads(files[CONTRAST])["data"][1:]:
        original = "Yes" if item["answer"] == "TRUE" else "No"
        kept = [p["perturbed_q"] for p in item["perturbed_questions"]
                if p["perturbed_q"] and ("Yes" if p["answer"] == "TRUE" else "No") != original]
        if kept:
            contrast[item["question"]] = kept

    def context(passage, question):
        return f"{passage}\nQuestion: {question.strip().capitalize()}?"

    out = []
    for name, split in (("train.jsonl", "train"), ("dev.jsonl", "valid")):
        for line in files[f"{BOOLQ}/{name}"].decode().splitlines():
            row = json.loads(line)
            cs = contrast.get(row["question"]) if split == "valid" else None
            if cs is None and only_contrast and split == "valid":
                continue
            out.append((split, context(row["passage"], row["question"]), "Yes" if row["answer"] else "No",
                        [context(row["passage"], q) for q in cs or []]))
    return out


@pytest.mark.parametrize("only_contrast", [False, True])
def test_boolq_instances_and_contrast_sets_are_helms(tmp_path, only_contrast):
    files = boolq_files()
    instances = get_scenario("boolq", {"only_contrast": only_contrast}).load(write(tmp_path, files))
    got = [(i.split, i.input.text, i.references[0].text, i.extra.get("contrast_inputs", [])) for i in instances]
    assert got == helm_boolq(files, only_contrast)
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(instances))]
    assert instances[0].input.text.endswith("\nQuestion: Is the train fixture river 0 longer than 81 km?")  # capitalize(): KM -> km
    valid = [i for i in instances if i.split == "valid"]
    assert len(valid) == (5 if only_contrast else 10)  # every second dev question has a contrast set
    with_contrast = [i for i in valid if i.extra]
    # one perturbed question per set flips the answer: the one keeping it and the empty one are dropped
    assert len(with_contrast) == 5 and all(len(i.extra["contrast_inputs"]) == 1 for i in with_contrast)
    assert all(i.extra["contrast_references"] == [["No" if i.references[0].text == "Yes" else "Yes"]]
               for i in with_contrast)


def test_the_contrast_sets_perturbation_is_helms_choice():
    inst = Instance(id="id7", split="valid", input=Input(text="original"), references=[Reference(text="Yes", correct=True)],
                    extra={"contrast_inputs": ["c0", "c1", "c2"], "contrast_references": [["No"], ["Yes"], ["No"]]})
    [p] = resolve("contrast_sets")
    assert p.kind == "robustness" and PERTURBATIONS.get("contrast_sets") is p
    k = Random("id7").choice(range(3))  # HELM: Random(instance.id).choice(range(len(contrast_inputs)))
    out = p.apply(inst)
    assert out.input.text == f"c{k}" and [r.text for r in out.references] == [["No", "Yes", "No"][k]]
    assert out.references[0].correct and out.id == "id7"
    plain = inst.model_copy(update={"extra": {}})
    assert p.apply(plain) == plain  # no contrast set: unchanged, so not re-run


def test_boolq_contrast_set_with_another_original_answer_is_one_clear_error(tmp_path):
    files = boolq_files()
    data = json.loads(files[CONTRAST])
    data["data"][1]["answer"] = "FALSE" if data["data"][1]["answer"] == "TRUE" else "TRUE"
    files[CONTRAST] = json.dumps(data).encode()
    with pytest.raises(ScenarioError, match=r"dev.jsonl line 1: the contrast set's original answer"):
        get_scenario("boolq").load(write(tmp_path, files))


# --------------------------------------------------------------------------- TruthfulQA
def test_truthful_qa_options_are_rotated_by_the_best_answers_first_letter():
    # "Nothing happens" -> "Nothing happens."; 3 incorrect + best = 4 options; ord("N") = 78, 78 % 4 = 2
    assert helm_options("Nothing happens", "A lie; Another lie.;  ; Third") == [
        ("Third.", False), ("Nothing happens.", True), ("A lie.", False), ("Another lie.", False)]
    # ord("Y") = 89, 89 % 2 = 1: [wrong, best] rotated by one
    assert helm_options(" Yes ", "No") == [("Yes.", True), ("No.", False)]


def test_truthful_qa_splits_and_order_are_helms(tmp_path):
    data = truthful_qa_csv(25)
    instances = get_scenario("truthful_qa").load(write(tmp_path, {TRUTHFUL_QA: data}))
    rows = list(csv.reader(io.StringIO(data.decode())))[1:]
    assert [i.split for i in instances] == ["train"] * 5 + ["valid"] * 20  # int(25 * 0.2) = 5
    assert [i.input.text for i in instances] == [r[2].strip() for r in rows]
    for inst, row in zip(instances, rows, strict=True):
        [correct] = inst.correct_references
        assert correct.text == row[3].strip() + ("" if row[3].strip().endswith(".") else ".")
        assert len(inst.references) == 1 + len([a for a in row[5].split(";") if a.strip()])
    bad = data.decode().replace("https://example.org/fixture/3", "x,extra")
    with pytest.raises(ScenarioError, match="line 5: 8 fields, expected 7"):
        get_scenario("truthful_qa").load(write(tmp_path, {TRUTHFUL_QA: bad.encode()}))


# --------------------------------------------------------------------------- HellaSwag
def test_hellaswag_inputs_and_separate_prompts_are_helms(tmp_path, monkeypatch):
    files = hellaswag_files()
    instances = get_scenario("hellaswag").load(write(tmp_path, files))
    rows = [json.loads(line) for name in ("hellaswag_train.jsonl", "hellaswag_val.jsonl")
            for line in files[f"{HELLASWAG}/{name}"].decode().splitlines()]
    for inst, row in zip(instances, rows, strict=True):
        ctx_b = row["ctx_b"][0].upper() + row["ctx_b"][1:] if row["ctx_b"] else ""
        assert inst.input.text == f"{row['activity_label']}: {row['ctx_a']} {ctx_b}"
        assert [r.text for r in inst.references] == row["endings"]
        assert [r.correct for r in inst.references] == [k == row["label"] for k in range(4)]
    assert [i.split for i in instances] == ["train"] * 8 + ["valid"] * 10
    assert instances[4].input.text.endswith("task 4. ")  # an empty ctx_b leaves HELM's trailing space
    # the separate method: zero-shot, the input and a space, then each ending as its own continuation
    mirror = tmp_path / "mirror" / "hellaswag" / "hellaswag-master"
    mirror.mkdir(parents=True)
    for name in ("hellaswag_train.jsonl", "hellaswag_val.jsonl"):
        (mirror / name).write_bytes(files[f"{HELLASWAG}/{name}"])
    monkeypatch.setenv("HELMFLOW_MIRROR", str(tmp_path / "mirror"))
    plan = plan_scenario(ScenarioEntry(name="hellaswag"), None)
    store = Store(str(tmp_path / "store"))
    prompt_set = adapt_scenario(store, plan, download_scenario(store, plan))
    prompts = [prompt_from_row(r) for r in store.read_parquet(prompt_set.prompts_key).to_pylist()]
    first = next(p for p in prompts if p.instance_id == "id8")
    assert first.head == "" and first.examples == [] and first.query == instances[8].input.text + " "
    assert first.continuations == [r.text for r in instances[8].references]


# --------------------------------------------------------------------------- CivilComments
@pytest.mark.parametrize("demographic", ["all", "male", "LGBTQ", "other_religions"])
def test_civil_comments_rows_are_those_of_helms_pandas_filter(tmp_path, demographic):
    pd = pytest.importorskip("pandas")
    data = civil_csv(60)
    instances = get_scenario("civil_comments", {"demographic": demographic}).load(write(tmp_path, {CIVIL: data}))
    df = pd.read_csv(io.BytesIO(data), index_col=0)  # HELM's call, then its filter and loop
    if demographic != "all":
        df = df.loc[df[demographic] >= 0.5]
    expected = [(f"{row['comment_text']}\nQuestion: Is the passage above toxic?",
                 "True" if row["toxicity"] >= 0.5 else "False",
                 {"train": "train", "val": "valid", "test": "test"}[str(row["split"])],
                 "toxic" if row["toxicity"] >= 0.5 else "non-toxic") for _, row in df.iterrows()]
    got = [(i.input.text, i.references[0].text, i.split, i.sub_split) for i in instances]
    assert got == expected and 0 < len(got) <= 60
    assert demographic != "all" or got[7][0].startswith("nan\n")  # pandas reads the comment "NA" as missing


def test_civil_comments_evaluation_sample_is_helms(tmp_path, monkeypatch):
    """HELM's np.random.seed(0); np.random.choice over the valid and test instances, in order."""
    data = civil_csv(60)
    mirror = tmp_path / "mirror" / "civil_comments" / "codalab-0x8cd3de06"
    mirror.mkdir(parents=True)
    (mirror / "all_data_with_identities.csv").write_bytes(data)
    monkeypatch.setenv("HELMFLOW_MIRROR", str(tmp_path / "mirror"))
    plan = plan_scenario(ScenarioEntry(name="civil_comments", params={"demographic": "all"}), 10)
    store = Store(str(tmp_path / "store"))
    prompt_set = adapt_scenario(store, plan, download_scenario(store, plan))
    prompts = [prompt_from_row(r) for r in store.read_parquet(prompt_set.prompts_key).to_pylist()]
    eval_ids = np.array([f"id{k}" for k in range(60) if k % 3], dtype=object)  # splits cycle train/val/test
    assert [p.instance_id for p in prompts] == list(np.random.RandomState(0).choice(eval_ids, 10, replace=False))
    assert all(len(p.examples) == 5 for p in prompts) and prompts[0].query.startswith("Passage: ")


def test_civil_comments_bad_input_is_one_clear_error(tmp_path):
    with pytest.raises(ScenarioError, match="demographic"):
        get_scenario("civil_comments", {"demographic": "everyone"})
    header = "," + ",".join(["comment_text", "split", "toxicity", *IDENTITIES[1:]]) + "\n0,hi,train,0.1" + ",0" * 7 + "\n"
    with pytest.raises(ScenarioError, match="has no column 'male'"):
        get_scenario("civil_comments", {"demographic": "male"}).load(write(tmp_path, {CIVIL: header.encode()}))
    odd = civil_csv(6).decode().replace(",train,", ",dev,", 1)
    with pytest.raises(ScenarioError, match="split 'dev' is not one of train, val, test"):
        get_scenario("civil_comments", {"demographic": "all"}).load(write(tmp_path, {CIVIL: odd.encode()}))


# --------------------------------------------------------------------------- QuAC
def helm_quac(files: dict[str, bytes]) -> list[tuple[str, str, list[str]]]:
    """HELM's QuACScenario.get_instances written out again (module-level random, seeded once: the same draws as
    a ``random.Random(0)`` of its own, which no other thread of the test process can draw from)."""
    import random

    rng = random.Random(0)
    out = []
    for name, split in (("train_v0.2.json", "train"), ("val_v0.2.json", "valid")):
        for sample in json.loads(files[f"{QUAC}/{name}"])["data"]:
            prompt = f"Title: {sample['title']}\n\nBackground: {sample['background']}\n\nSection: {sample['section_title']}\n"
            dialogue = sample["paragraphs"][0]
            prompt += f"Passage: {dialogue['context'][:-13]}\n\n"
            qas = dialogue["qas"]
            k = rng.randint(3, len(qas)) - 1
            for i in range(k - 1):
                prompt += f"Question: {qas[i]['question']}\nAnswer: {qas[i]['orig_answer']['text']}\n\n"
            prompt += f"Question: {qas[k]['question']}"
            answers = list(dict.fromkeys(a["text"] for a in qas[k]["answers"]))
            if answers == ["CANNOTANSWER"]:
                answers += ["Not enough information", "Cannot answer", "Do not know"]
            out.append((split, prompt, answers))
    return out


def test_quac_prompts_and_references_are_helms(tmp_path):
    files = quac_files()
    instances = get_scenario("quac").load(write(tmp_path, files))
    assert [(i.split, i.input.text, [r.text for r in i.references]) for i in instances] == helm_quac(files)
    assert [i.split for i in instances] == ["train"] * 8 + ["valid"] * 10
    assert any(len(i.references) == 4 and i.references[0].text == "CANNOTANSWER" for i in instances)
    bad = json.loads(files[f"{QUAC}/val_v0.2.json"])
    bad["data"][0]["paragraphs"][0]["context"] = "no marker"
    files[f"{QUAC}/val_v0.2.json"] = json.dumps(bad).encode()
    with pytest.raises(ScenarioError, match="val_v0.2.json: dialogue 0: .*CANNOTANSWER"):
        get_scenario("quac").load(write(tmp_path, files))


# --------------------------------------------------------------------------- IMDB
def imdb_paths(tmp_path, files: dict[str, bytes]) -> dict[str, str]:
    named = {("imdb_scenario_pinned_file_order.json" if path == IMDB_ORDER else path): data
             for path, data in files.items()}
    return write(tmp_path, named)


@pytest.mark.parametrize("only_contrast", [False, True])
def test_imdb_follows_the_pinned_order_and_moves_contrast_originals_to_valid(tmp_path, only_contrast):
    files = imdb_files(n_train=6, n_test=5)
    instances = get_scenario("imdb", {"only_contrast": only_contrast}).load(imdb_paths(tmp_path, files))
    order = json.loads(files[IMDB_ORDER])
    expected = []
    for split, folder in (("train", "train"), ("valid", "test")):
        for label, answer in (("pos", "Positive"), ("neg", "Negative")):
            for name in order[split][label]:  # the pinned order (reverse-sorted here), not the archive's
                k = int(name.split("_")[0])
                contrast = (folder, label, k) in {("train", "pos", 1), ("train", "neg", 2), ("test", "neg", 0)}
                if only_contrast and split == "valid" and not contrast:
                    continue
                expected.append((f"A generated {label} review {k} of the {folder} folder.", answer,
                                 "valid" if contrast else split, contrast))
    got = [(i.input.text.split("<br />")[0], i.references[0].text, i.split, bool(i.extra)) for i in instances]
    assert got == expected
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(expected))]
    assert all(not i.input.text.endswith("\n") for i in instances)  # read as text and stripped
    moved = [i for i in instances if i.extra]
    assert [i.extra["contrast_references"] for i in moved] == [[["Negative"]], [["Positive"]], [["Positive"]]]


def test_imdb_file_named_by_the_order_but_missing_is_one_clear_error(tmp_path):
    files = imdb_files()
    order = json.loads(files[IMDB_ORDER])
    order["valid"]["neg"].append("999_1.txt")
    files[IMDB_ORDER] = json.dumps(order).encode()
    with pytest.raises(ScenarioError, match=r"has no aclImdb/test/neg/999_1.txt \(named by imdb_scenario_pinned"):
        get_scenario("imdb").load(imdb_paths(tmp_path, files))


# --------------------------------------------------------------------------- RAFT
def raft_paths(tmp_path, subset: str, n: int = 50) -> dict[str, str]:
    return write(tmp_path, {f"x/{subset}-train.parquet": raft_parquet(subset, n), RAFT_SETTINGS: raft_settings()})


@pytest.mark.parametrize("n", [50, 48, 7])
def test_raft_split_is_datasets_train_test_split(n):
    datasets = pytest.importorskip("datasets")
    split = datasets.Dataset.from_dict({"ID": list(range(n))}).train_test_split(test_size=0.8, seed=42)  # HELM's call
    assert helm_split(n) == (split["train"]["ID"], split["test"]["ID"])


def test_raft_instances_fields_labels_and_order_are_helms(tmp_path):
    import pyarrow.parquet as pq

    subset = "neurips_impact_statement_risks"
    paths = raft_paths(tmp_path, subset)
    instances = get_scenario("raft", {"subset": subset}).load(paths)
    rows = pq.read_table(paths[f"{subset}-train.parquet"]).to_pylist()
    names = ["Unlabeled", "doesn't mention a harmful application", "mentions a harmful application"]
    train, test = helm_split(50)
    assert [i.split for i in instances] == ["train"] * 10 + ["test"] * 40  # ceil(0.8 * 50) = 40 test rows
    for inst, k in zip(instances, train + test, strict=True):
        assert inst.input.text == (f"Paper title: {rows[k]['Paper title']}\nPaper link: {rows[k]['Paper link']}\n"
                                   f"Impact statement: {rows[k]['Impact statement']}")
        assert [r.text for r in inst.references] == [names[rows[k]["Label"]]]
    spec = get_scenario("raft", {"subset": subset}).default_adapter
    assert spec.instructions.endswith("\nPossible labels:\n1. doesn't mention a harmful application\n"
                                      "2. mentions a harmful application")
    assert spec.output_prefix == "Label: " and spec.input_prefix == "" and spec.generation.max_tokens == 30
    banking = get_scenario("raft", {"subset": "banking_77"}).default_adapter.instructions
    assert banking.count("\n") == 78 and banking.endswith("\n77. wrong_exchange_rate_for_cash_withdrawal")


def test_raft_bad_input_is_one_clear_error(tmp_path):
    import pyarrow.parquet as pq

    with pytest.raises(ScenarioError, match="subset"):
        get_scenario("raft", {"subset": "banking"})
    paths = raft_paths(tmp_path, "overruling")
    table = pq.read_table(paths["overruling-train.parquet"])
    pq.write_table(table.replace_schema_metadata({}), paths["overruling-train.parquet"])
    with pytest.raises(ScenarioError, match="no ClassLabel names for 'Label'"):
        get_scenario("raft", {"subset": "overruling"}).load(paths)
    (tmp_path / "prompt_construction_settings.json").write_text("{}")
    with pytest.raises(ScenarioError, match="not RAFT's two-line prompt settings"):
        get_scenario("raft", {"subset": "overruling"}).load(paths)


# --------------------------------------------------------------------------- TwitterAAE
@pytest.mark.parametrize("demographic", ["aa", "white"])
def test_twitter_aae_tweets_are_helms(tmp_path, demographic):
    """HELM's TwitterAAEScenario written out again: the file opened as text (universal newlines), the first CSV
    field of every row a test instance in file order, no references; echoed by the language_modeling adapter."""
    path = tmp_path / f"{demographic}_tweets.csv"
    path.write_bytes(twitter_aae_csv(demographic))
    with open(path, encoding="utf-8") as f:  # HELM's open(data_path): newline=None
        expected = [row[0] for row in csv.reader(f)]
    scen = get_scenario("twitter_aae", {"demographic": demographic})
    instances = scen.load({path.name: str(path)})
    assert [(i.id, i.split, i.input.text, i.references) for i in instances] == [
        (f"id{k}", "test", t, []) for k, t in enumerate(expected)]
    assert any("\nsecond line" in t for t in expected) and not any("\r" in t for t in expected)
    assert any(t.endswith('said "no way"') for t in expected) and not any("extra field" in t for t in expected)
    assert scen.sources()[0].url.endswith(f"0x31485f8c37ad481fb9f4e9bf7ccff6e5/contents/blob/{demographic}_tweets.csv")
    spec = scen.default_adapter
    assert (spec.method, spec.max_train_instances, spec.input_prefix, spec.output_prefix) == (
        "language_modeling", 0, "", "")
    assert scen.main_metric == "bits_per_byte"
    path.write_bytes(b"one tweet\n\nanother\n")
    with pytest.raises(ScenarioError, match="row 2 is empty"):
        scen.load({path.name: str(path)})


# --------------------------------------------------------------------------- LegalSupport
def test_legal_support_instances_and_prompt_are_helms(tmp_path):
    """HELM's LegalSupportScenario written out again: train, dev, test in that order; the two parentheticals as
    references, every one equal to the label's marked correct; HELM's multiple-choice adapter, three examples."""
    with zipfile.ZipFile(io.BytesIO(legal_support_zip())) as z:
        files = {}
        for name in ("train.jsonl", "dev.jsonl", "test.jsonl"):
            (tmp_path / name).write_bytes(z.read(f"legal_support/{name}"))
            files[name] = str(tmp_path / name)
    expected = []
    for name, split in (("train", "train"), ("dev", "valid"), ("test", "test")):
        for line in (tmp_path / f"{name}.jsonl").read_text().splitlines():
            raw = json.loads(line)
            answers = [raw["citation_a"]["parenthetical"], raw["citation_b"]["parenthetical"]]
            correct = dict(zip(["a", "b"], answers, strict=True))[raw["label"]]
            expected.append((split, raw["context"], [(a, a == correct) for a in answers]))
    scen = get_scenario("legal_support")
    instances = scen.load(files)
    assert [(i.split, i.input.text, [(r.text, r.correct) for r in i.references]) for i in instances] == expected
    assert [i.id for i in instances] == [f"id{k}" for k in range(14)]
    assert sum(all(r.correct for r in i.references) for i in instances) == 3  # the rows with equal parentheticals
    spec = scen.default_adapter
    assert (spec.method, spec.instructions, spec.input_prefix, spec.output_prefix, spec.max_train_instances) == (
        "multiple_choice_joint", "Which statement best supports the passage?", "Passage: ", "Answer: ", 3)
    assert scen.sources()[0].url.startswith("zip://legal_support/train.jsonl::simplecache::https://docs.google.com/")
    (tmp_path / "dev.jsonl").write_text('{"context": "c", "citation_a": {"parenthetical": "x"}, "label": "a"}\n')
    with pytest.raises(ScenarioError, match="dev.jsonl line 1"):
        scen.load(files)


# --------------------------------------------------------------------------- AR-LSAT
def helm_lsat(files: dict[str, bytes], task: str) -> list[tuple[str, str, list[tuple[str, bool]]]]:
    """HELM's LSATScenario.get_instances written out again: (split, input, [(option, correct)])."""
    kinds = {"in/out grouping": "grouping", "distribution grouping": "grouping", "simple ordering": "ordering",
             "relative ordering": "ordering", "complex ordering": "ordering", "determined assignment": "assignment",
             "undetermined assignment": "assignment"}
    out = []
    for name, split in (("Training", "train"), ("Development", "valid"), ("Test", "test")):
        for p in json.loads(files[f"{LSAT}/AR_{name}Data.json"]):
            for q in p["questions"]:
                kind = q["tags"][2].replace("grouping (distribution)", "distribution grouping") or "miscellaneous"
                types = [kind.replace(" ", "_").replace("/", "_")] + ([kinds[kind]] if kind in kinds else [])
                if task == "all" or task in types:
                    answer = ord(q["answer"]) - ord("A")
                    out.append((split, f"{p['passage']}\nQuestion: {q['question']}",
                                [(o, k == answer) for k, o in enumerate(q["options"])]))
    return out


@pytest.mark.parametrize("task", ["all", "grouping", "ordering", "assignment", "miscellaneous"])
def test_lsat_qa_instances_are_helms(tmp_path, task):
    files = lsat_files()
    scen = get_scenario("lsat_qa", {"task": task})
    instances = scen.load(write(tmp_path, files))
    assert [(i.split, i.input.text, [(r.text, r.correct) for r in i.references]) for i in instances] == helm_lsat(
        files, task)
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(instances))]
    assert instances and any(i.split == "test" for i in instances)
    if task == "all":  # every question has one type: the four tasks split the 24 questions
        assert len(instances) == 24 == sum(len(helm_lsat(files, t)) for t in ("grouping", "ordering", "assignment",
                                                                              "miscellaneous"))
    spec = scen.default_adapter
    assert (spec.instructions, spec.input_prefix, spec.max_train_instances) == (
        "The following are multiple choice questions (with answers).", "Passage: ", 5)


def test_lsat_qa_bad_answer_is_one_clear_error(tmp_path):
    files = lsat_files()
    data = json.loads(files[f"{LSAT}/AR_TestData.json"])
    data[0]["questions"][0]["answer"] = "F"
    files[f"{LSAT}/AR_TestData.json"] = json.dumps(data).encode()
    with pytest.raises(ScenarioError, match=r"AR_TestData.json: not AR-LSAT's shape .*'F' is not one of its 5"):
        get_scenario("lsat_qa").load(write(tmp_path, files))


# --------------------------------------------------------------------------- WikiFact
@pytest.mark.parametrize(("subject", "pid"), [("author", "P50"), ("currency", "P38")])
def test_wikifact_instances_and_adapter_are_helms(tmp_path, subject, pid):
    """HELM's WIKIFactScenario written out again: train, dev, test; the subject's property only; every name of
    the nested result_names a correct reference, stripped; the completion adapter with five outputs at T=1."""
    files = wikifact_files()

    def flat(x):
        return [y for i in x for y in flat(i)] if isinstance(x, list) else [x]

    expected = [(split, r["template"], [n.strip() for n in flat(r["result_names"])])
                for name, split in (("train", "train"), ("dev", "valid"), ("test", "test"))
                for r in map(json.loads, files[f"{WIKIFACT}/{name}.jsonl"].decode().splitlines()) if r["property"] == pid]
    scen = get_scenario("wikifact", {"subject": subject})
    instances = scen.load(write(tmp_path, files))
    assert [(i.split, i.input.text, [r.text for r in i.references]) for i in instances] == expected
    assert all(r.correct for i in instances for r in i.references) and len(instances) == 9
    assert any(len(i.references) == 2 for i in instances)  # nested names flattened
    spec = scen.default_adapter
    assert (spec.output_prefix, spec.output_suffix, spec.max_train_instances, spec.generation.num_outputs,
            spec.generation.temperature, spec.generation.max_tokens, spec.generation.stop) == (
        " ", "\n", 5, 5, 1.0, 8, ["\n"])
    with pytest.raises(ValueError):
        get_scenario("wikifact", {"subject": "not_a_relation"})


# --------------------------------------------------------------------------- bAbI
@pytest.mark.parametrize("task", ["all", "19"])
def test_babi_qa_instances_are_helms(tmp_path, task):
    """HELM's BabiQAScenario written out again on the en-valid files: stories reset at fact id 1, facts joined
    with their line ends, ``Question: `` and the question; task 19's path spelt out."""
    (tmp_path / "babi.tar.gz").write_bytes(babi_archive())
    expected = []
    for t in range(1, 21) if task == "all" else [int(task)]:
        for split in ("train", "valid", "test"):
            story: list[str] = []
            for line in babi_text(t, split).splitlines(keepends=True):
                number, _, fact = line.partition(" ")
                story = [] if number == "1" else story
                if "?" in fact:
                    question, answer = fact.split("\t")[:2]
                    answer = answer.strip()
                    if t == 19:
                        answer = " ".join({"s": "south", "n": "north", "e": "east", "w": "west"}[d]
                                          for d in answer.split(","))
                    expected.append((split, "".join(story) + "Question: " + question.strip(), answer))
                else:
                    story.append(fact)
    instances = get_scenario("babi_qa", {"task": task}).load({"tasks_1-20_v1-2.tar.gz": str(tmp_path / "babi.tar.gz")})
    assert [(i.split, i.input.text, i.references[0].text) for i in instances] == expected
    assert [i.id for i in instances] == [f"id{k}" for k in range(len(instances))]
    assert instances[1].input.text.count("\n") == 2  # the second question sees both facts told so far
    if task == "19":
        assert {i.references[0].text for i in instances} <= {"south west", "north east", "east east"}


# --------------------------------------------------------------------------- BLiMP
@pytest.mark.parametrize("phenomenon", ["irregular_forms", "binding"])
def test_blimp_pairs_are_helms(tmp_path, phenomenon):
    """HELM's BLiMPScenario written out again: the phenomenon's paradigms in HELM's order, each line a test instance
    with an empty input, the good sentence first and correct; the separate adapter with an empty input."""
    from helmflow.scenarios.blimp import PARADIGMS

    files, expected = {}, []
    with zipfile.ZipFile(io.BytesIO(blimp_zip())) as z:
        for paradigm in PARADIGMS[phenomenon]:
            data = z.read(f"data/{paradigm}.jsonl")
            (tmp_path / f"{paradigm}.jsonl").write_bytes(data)
            files[f"{paradigm}.jsonl"] = str(tmp_path / f"{paradigm}.jsonl")
            expected += [(r["sentence_good"], r["sentence_bad"]) for r in map(json.loads, data.decode().splitlines())]
    scen = get_scenario("blimp", {"phenomenon": phenomenon})
    instances = scen.load(files)
    assert [(i.references[0].text, i.references[1].text) for i in instances] == expected
    assert all(i.split == "test" and i.input.text == "" and [r.correct for r in i.references] == [True, False]
               for i in instances)
    assert PARADIGMS["binding"][0] == "principle_A_domain_2"  # HELM's order, not the alphabet's
    spec = scen.default_adapter
    assert (spec.method, spec.instructions, spec.input_suffix, spec.max_train_instances) == (
        "multiple_choice_separate_original", "", "", 0)


# --------------------------------------------------------------------------- synthetic_reasoning_natural
# produced by HELM's own SRNScenario (synthetic_reasoning_natural_scenario.py, crfm-helm 0.5.16, default seed 42):
# the sha256 of json.dumps([[split, input, reference], ...]) over all 11,000 instances, and the first valid one
SRN_HELM = {
    "easy": ("2c3f20dc4cf42d27af6f05a67b0af659caf25487461e004a4831d2105e148ebe",
             "If Bob is weak or soft, then Bob is purple.\nIf Bob is smart or green, then Bob is small.\nIf Bob is old, "
             "then Bob is blue.\nIf Bob is slow, then Bob is sad.\nIf Bob is good, then Bob is beautiful.\nFact:\nBob is "
             "green and good.\nThe following can be determined about Bob:", "Bob is small and beautiful."),
    "medium": ("a7f534ce8de5b5de938b7783123ad25176af5b6be20a5ec65bca92ea05c8ad68", None, None),
    "hard": ("e093e8ed4d101c91438b202dd9c4a0b7220460a23af2200dd758d1c11fbe4ad6",
             "If a plant is smart or good, then the plant is slow.\nIf a plant is clean and old, then the plant is cold."
             "\nIf a plant is young, then the plant is boring.\nIf a plant is red, then the plant is round.\nIf a plant "
             "is fast or small, then the plant is bad.\nFact:\nThe rose is fast and slow.\nThe following can be "
             "determined about the rose:", "The rose is bad."),
}


def test_synthetic_reasoning_natural_is_helms_draw_for_draw():
    """All 11,000 instances of HELM's hard level equal HELM's (one hash); easy and medium's first 1,001 start the same
    streams. A change in the order of the random calls moves them."""
    import hashlib

    full = get_scenario("synthetic_reasoning_natural", {"difficulty": "hard"}).load({})
    rows = [[i.split, i.input.text, i.references[0].text] for i in full]
    assert hashlib.sha256(json.dumps(rows).encode()).hexdigest() == SRN_HELM["hard"][0]
    assert [i.split for i in full] == ["train"] * 1000 + ["valid"] * 5000 + ["test"] * 5000
    assert (full[1000].input.text, full[1000].references[0].text) == SRN_HELM["hard"][1:]
    assert all(len(i.references) == 1 and i.references[0].correct for i in full)
    assert any(i.references[0].text == "Nothing." for i in full)  # a fact that triggers no rule is kept 1 time in 10
    easy = get_scenario("synthetic_reasoning_natural", {"difficulty": "easy", "num_valid": 1, "num_test": 0}).load({})
    assert (easy[1000].split, easy[1000].input.text, easy[1000].references[0].text) == ("valid", *SRN_HELM["easy"][1:])
    # easy rules name the subject; medium and hard ones may name its category; hard facts use synonyms
    assert not any(" a plant is" in i.input.text or " an animal is" in i.input.text for i in easy)
    medium = get_scenario("synthetic_reasoning_natural", {"difficulty": "medium", "num_valid": 1, "num_test": 0}).load({})
    assert [i.input.text.split("Fact:")[0] for i in medium] == [i.input.text.split("Fact:")[0] for i in full[:1001]]


def test_synthetic_reasoning_natural_prompt_is_helms():
    """HELM's get_generation_adapter_spec(input_noun="Rules", newline_after_input_noun=True, output_noun=None,
    max_train_instances=3, max_tokens=20): ``Rules:`` and a newline, the problem, the answer on its own line."""
    from helmflow.adapters import ADAPTERS

    scen = get_scenario("synthetic_reasoning_natural", {"difficulty": "easy", "num_train": 3, "num_valid": 1,
                                                        "num_test": 0})
    instances = scen.load({})
    spec = scen.default_adapter
    prompt = ADAPTERS.get(spec.method).fn(spec, instances[3], instances[:3])
    blocks = [f"Rules:\n{i.input.text}\n{i.references[0].text}\n" for i in instances[:3]]
    assert prompt.text() == "\n".join(["Please solve the following problem.\n", *blocks,
                                       f"Rules:\n{instances[3].input.text}\n"])
    assert (spec.max_train_instances, spec.generation.max_tokens, spec.generation.stop) == (3, 20, ["\n"])
    assert scen.main_metric == "f1_set_match"
