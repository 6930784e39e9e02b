"""HELM Lite's web-sourced scenarios (NarrativeQA, NaturalQuestions, OpenbookQA, MMLU, MedQA) select what
HELM selects, on fixtures of realistic size in the upstream formats.

Each test re-implements HELM's procedure independently from its description (reference §0.1, §B.2) with
the same calls HELM makes (on a ``random.Random`` seeded as HELM seeds the global ``random``: the module's
functions are one such instance's methods, so the draws are the same, and other threads of the test process
cannot take draws from it; ``np.random.RandomState(0).choice``, which is ``np.random.seed(0)`` then
``np.random.choice``) and asserts that our loader, sampler and few-shot draw give the same instance ids,
splits, references and examples. The files are written by ``lite_fixtures`` (no real rows).
"""

from __future__ import annotations

import csv
import gzip
import html
import io
import json
import random
import re
import tarfile
import zipfile
from collections import defaultdict
from contextlib import contextmanager
from itertools import cycle

import numpy as np
import pytest

from helmflow.adapters import adapt
from helmflow.scenarios import ScenarioError, get_scenario
from tests.support.lite_fixtures import medqa_zip, mmlu_tar, narrativeqa_members, nq_files, obqa_zip


# --------------------------------------------------------------------------- HELM's procedures, re-implemented
@contextmanager
def global_random():
    """The generator HELM's global ``random`` module is, on its own (seed it as HELM seeds the module)."""
    yield random.Random()


def helm_eval_ids(instances: list[tuple[str, str]], max_eval: int) -> list[str]:
    """``downsample_eval_instances``: valid+test pooled in order; over the cap, np.random.seed(0) + choice."""
    pool = [i for i, split in instances if split in ("valid", "test")]
    if len(pool) <= max_eval:
        return pool
    return list(np.random.RandomState(0).choice(pool, max_eval, replace=False))


def helm_examples(train: list[tuple[str, str]], k: int, seed: int = 0) -> list[str]:
    """``InContextLearningAdapter.sample_examples`` on (id, first correct reference text) pairs."""
    with global_random() as rng:
        rng.seed(seed)
        wanted = min(len(train), k)
        by_label: dict[str, list[str]] = defaultdict(list)
        for ident, label in train:
            by_label[label].append(ident)
        counts: dict[int, list[str]] = defaultdict(list)
        for label, members in sorted(by_label.items()):
            counts[len(members)].append(label)
        order: list[str] = []
        for count in sorted(counts, reverse=True):
            rng.shuffle(counts[count])
            order.extend(counts[count])
        out, labels = [], cycle(order)
        while wanted > 0:
            members = by_label[next(labels)]
            if members:
                out.append(members.pop(rng.randrange(len(members))))
                wanted -= 1
        return out


def write(tmp_path, files: dict[str, bytes]) -> dict[str, str]:
    out = {}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        out[name] = str(tmp_path / name)
    return out


def check_sampling(scen, instances, max_eval: int = 1000) -> list:
    """Our evaluation sample and few-shot examples equal HELM's; returns our prompts."""
    spec = scen.default_adapter.override(max_eval_instances=max_eval)
    prompts = adapt(spec, instances)
    expected = helm_eval_ids([(i.id, i.split) for i in instances], max_eval)
    assert [p.instance_id for p in prompts] == expected
    train = [i for i in instances if i.split == "train"]
    by_id = {i.id: i for i in train}
    chosen = helm_examples([(i.id, i.correct_references[0].text) for i in train], spec.max_train_instances)
    assert len(chosen) == min(5, len(train))
    for example, ident in zip(prompts[0].examples, chosen, strict=True):
        assert by_id[ident].input.text in example  # the same examples, in HELM's order
    return prompts


# --------------------------------------------------------------------------- NarrativeQA
def test_narrative_qa_keeps_helms_question_per_document_and_sample(tmp_path):
    members = narrativeqa_members()  # 1,102 / 115 / 355 stories, 2-40 questions each
    files = write(tmp_path, {"summaries.csv": members["narrativeqa-master/third_party/wikipedia/summaries.csv"],
                             "qaps.csv": members["narrativeqa-master/qaps.csv"]})
    summaries = list(csv.DictReader(io.StringIO(members["narrativeqa-master/third_party/wikipedia/summaries.csv"].decode())))
    qaps = list(csv.DictReader(io.StringIO(members["narrativeqa-master/qaps.csv"].decode())))
    expected = []
    with global_random() as rng:
        rng.seed(0)
        for split in ("train", "valid", "test"):
            summary = {r["document_id"]: r["summary"] for r in summaries if r["set"] == split}
            rows: dict[str, list[dict]] = {}
            for r in qaps:
                if r["set"] == split:
                    rows.setdefault(r["document_id"], []).append(r)
            for doc, group in rows.items():
                row = rng.choice(group)
                q = row["question"].strip()
                expected.append((f"id{len(expected)}", split, summary[doc].strip() + "\nQuestion: " + (q if q[-1] == "?" else q + "?"),
                                 [row["answer1"], row["answer2"]]))
    scen = get_scenario("narrative_qa", {"follow_format": True})
    instances = scen.load(files)
    assert [(i.id, i.split, i.input.text, [r.text for r in i.references]) for i in instances] == expected
    assert len(instances) == 1572 and all(all(r.correct for r in i.references) for i in instances)
    prompts = check_sampling(scen, instances)
    assert len(prompts) == 470  # valid+test pool under the cap: every story of both
    check_sampling(scen, instances, max_eval=100)
    text = prompts[0].text()
    first = next(i for i in instances if i.id == prompts[0].instance_id)
    assert text.startswith("Below are example inputs") and text.count("\nPassage: ") == 6  # 5 examples + the question
    assert text.endswith("Passage: " + first.input.text + "\nAnswer:\n\nWrite only the output of the final example, in "
                         "exactly the same format as the outputs shown above.\nAnswer:")
    plain = adapt(get_scenario("narrative_qa").default_adapter.override(max_eval_instances=1), instances)[0].text()
    assert plain.startswith("Passage: ") and plain.endswith("\nAnswer:")


# --------------------------------------------------------------------------- NaturalQuestions
def helm_nq(files: dict[str, bytes], mode: str) -> list[tuple]:
    """HELM's NaturalQA scenario on the five files, from its description."""
    def clean(raw: bytes) -> str:
        return re.sub("<([^>]*)>", "", html.unescape(raw.replace(b"\xc2\xa0", b" ").decode("utf-8")))

    out = []
    with global_random() as rng:
        rng.seed(0)
        for name in sorted(files):
            raw = [json.loads(line) for line in gzip.decompress(files[name]).splitlines()]
            kept = [e for e in raw if any(len(a["short_answers"]) for a in e["annotations"])]
            for i, e in enumerate(kept):
                page = e["document_html"].encode()
                shorts, longs = [], []
                for a in e["annotations"]:
                    long_text = clean(page[a["long_answer"]["start_byte"]:a["long_answer"]["end_byte"]])
                    for s in a["short_answers"]:
                        shorts.append(clean(page[s["start_byte"]:s["end_byte"]]))
                        longs.append(long_text)
                split = "train" if i % 2 == 0 else "valid"
                q = e["question_text"].capitalize()
                q = q if q[-1] == "?" else q + "?"
                pick = rng.randint(0, len(shorts) - 1)
                text = q if mode == "closedbook" else f"Passage: {longs[pick]}\n\nQuestion: {q}"
                answers = shorts[pick:pick + 1] if split == "train" else list(dict.fromkeys(shorts))
                out.append((f"id{len(out)}", split, text, answers))
    return out


@pytest.mark.parametrize("mode", ["openbook_longans", "closedbook"])
@pytest.mark.slow
def test_natural_qa_splits_answers_and_sample_are_helms(tmp_path, mode):
    data = nq_files()  # 7,830 examples in five files, about half with a short answer
    files = write(tmp_path, data)
    scen = get_scenario("natural_qa", {"mode": mode})
    instances = scen.load(files)
    assert [(i.id, i.split, i.input.text, [r.text for r in i.references]) for i in instances] == helm_nq(data, mode)
    valid = [i for i in instances if i.split == "valid"]
    assert len(valid) > 1000 and any(len(i.references) > 1 for i in valid)
    assert any("caf\u00e9 & more" in i.input.text for i in instances) if mode != "closedbook" else True
    prompts = check_sampling(scen, instances)  # 1,000 drawn from the valid pool by HELM's seeded choice
    assert len(prompts) == 1000 and {p.split for p in prompts} == {"valid"}
    assert scen.default_adapter.input_prefix == ("" if mode == "openbook_longans" else "Question: ")


# --------------------------------------------------------------------------- OpenbookQA, MMLU, MedQA
def test_openbookqa_reads_train_and_test_and_samples_as_helm(tmp_path):
    archive = zipfile.ZipFile(io.BytesIO(obqa_zip()))
    files = write(tmp_path, {n: archive.read(f"OpenBookQA-V1-Sep2018/Data/Main/{n}") for n in ("train.jsonl", "test.jsonl")})
    scen = get_scenario("openbookqa")
    instances = scen.load(files)
    rows = [(json.loads(line), split) for name, split in (("train.jsonl", "train"), ("test.jsonl", "test"))
            for line in (tmp_path / name).read_text().splitlines()]
    assert [(i.id, i.split, i.input.text, [r.text for r in i.references if r.correct]) for i in instances] == [
        (f"id{k}", split, r["question"]["stem"], [r["question"]["choices"]["ABCD".index(r["answerKey"])]["text"]])
        for k, (r, split) in enumerate(rows)]
    prompts = check_sampling(scen, instances)
    assert len(prompts) == 500 and prompts[0].output_mapping["A"] == instances[4957].references[0].text
    assert prompts[0].text().endswith("\nD. " + instances[4957].references[3].text + "\nAnswer:")


def test_mmlu_subject_files_and_in_context_order_are_helms(tmp_path):
    tar = tarfile.open(fileobj=io.BytesIO(mmlu_tar()))
    scen = get_scenario("mmlu", {"subject": "econometrics"})
    files = write(tmp_path, {s.filename: tar.extractfile(s.member).read() for s in scen.sources()})
    instances = scen.load(files)
    assert [i.split for i in instances] == ["train"] * 5 + ["valid"] * 12 + ["test"] * 114
    assert [i.id for i in instances] == [f"id{k}" for k in range(131)]
    dup = next(i for i in instances if i.references[0].text == i.references[2].text)
    assert [r.correct for r in dup.references].count(True) in (1, 2, 3)  # equal texts are correct together, as HELM
    prompts = check_sampling(scen, instances)
    assert len(prompts) == 126 and "multiple-choice question about econometrics" in prompts[0].head
    with pytest.raises(ScenarioError, match="unknown MMLU subject 'astrology'"):
        get_scenario("mmlu", {"subject": "astrology"})


@pytest.mark.slow
def test_med_qa_strips_options_and_draws_helms_1000(tmp_path):
    archive = zipfile.ZipFile(io.BytesIO(medqa_zip()))
    scen = get_scenario("med_qa")
    files = write(tmp_path, {s.filename: archive.read(s.member) for s in scen.sources()})
    instances = scen.load(files)
    assert len(instances) == 12723 and [i.id for i in instances[:2]] == ["id0", "id1"]
    assert instances[0].references[1].text == "fixture treatment B for train 0"  # trailing newline and quote stripped
    prompts = check_sampling(scen, instances)
    splits = [p.split for p in prompts]
    assert len(prompts) == 1000 and 400 < splits.count("valid") < 600  # the pool mixes valid and test, as HELM's
    (tmp_path / "phrases_no_exclude_dev.jsonl").write_text('{"question": "q", "options": {"A": "x"}, "answer_idx": "A"}\n')
    with pytest.raises(ScenarioError, match=r"phrases_no_exclude_dev.jsonl line 1: expected 4 options"):
        scen.load(files)
