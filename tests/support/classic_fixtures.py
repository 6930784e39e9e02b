"""Fixture files for HELM Classic's own sources, in the upstream shapes, every row written here.

No row comes from the real datasets: passages, questions, comments and answers are generated text. The
shapes are upstream's: BoolQ's JSON Lines ``{question, passage, answer}`` and AllenAI's contrast-set JSON
(``{"data": [<header>, {question, answer: "TRUE"/"FALSE", perturbed_questions: [{perturbed_q, answer}]}]}``),
HellaSwag's JSON Lines (``activity_label, ctx_a, ctx_b, endings, label`` and more), TruthfulQA's seven-column
CSV, and WILDS' CivilComments CSV (an unnamed index column, ``comment_text``, ``toxicity``, ``split`` and the
eight identity columns among others).

:func:`classic_source_tree` writes them, with HELM Lite's shared sources, under ``<root>/<host>/<path>``
(the layout ``$HELMFLOW_SOURCE_HOST`` and ``$HELMFLOW_GITHUB_RAW`` read).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

from helmflow.scenarios.truthful_qa import COMMIT as TRUTHFUL_QA_COMMIT
from tests.support.lite_fixtures import csv_text, jsonl, source_tree

BOOLQ = "huggingface.co/datasets/stanford-crfm/helm-scenarios/resolve/main/boolq"
CONTRAST = "raw.githubusercontent.com/allenai/contrast-sets/main/BoolQ/boolq_perturbed.json"
HELLASWAG = "raw.githubusercontent.com/rowanz/hellaswag/master/data"
TRUTHFUL_QA = f"raw.githubusercontent.com/sylinrl/TruthfulQA/{TRUTHFUL_QA_COMMIT}/data/v1/TruthfulQA.csv"
CIVIL = "worksheets.codalab.org/rest/bundles/0x8cd3de0634154aeaad2ee6eb96723c6e/contents/blob/all_data_with_identities.csv"
IDENTITIES = ["male", "female", "LGBTQ", "christian", "muslim", "other_religions", "black", "white"]


# --------------------------------------------------------------------------- BoolQ
def boolq_rows(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        subject = f"the {split} fixture river {k}"
        # every third passage names a person with a male pronoun, so the fairness perturbations change it
        who = " He said that the river is long." if k % 3 == 0 else ""
        rows.append({"question": f"  is {subject} longer than {rng.randint(2, 90)} KM  ",
                     "title": f"Fixture river {k}", "answer": rng.random() < 0.5,
                     "passage": f"Fixture river {k} flows through a generated valley.{who}"})
    return rows


def boolq_contrast(dev: list[dict], every: int = 2) -> dict:
    """A contrast set for every ``every``-th dev question: two perturbed questions, one flipping the answer,
    one keeping it (HELM drops the latter), and an empty one (dropped too)."""
    items = []
    for k, row in enumerate(dev):
        if k % every:
            continue
        original = "TRUE" if row["answer"] else "FALSE"
        flipped = "FALSE" if row["answer"] else "TRUE"
        items.append({"paragraph": row["passage"], "question": row["question"], "answer": original,
                      "perturbed_questions": [
                          {"perturbed_q": f"is it not the case that {k} flows", "answer": flipped,
                           "perturbation_strategy": "negation"},
                          {"perturbed_q": f"does river {k} still flow", "answer": original,
                           "perturbation_strategy": "paraphrase"},
                          {"perturbed_q": "", "answer": flipped, "perturbation_strategy": "none"}]})
    header = {"paragraph": "", "question": "header row", "answer": "", "perturbed_questions": []}
    return {"data": [header, *items]}


def boolq_files(n_train: int = 12, n_dev: int = 10, seed: int = 5) -> dict[str, bytes]:
    dev = boolq_rows(n_dev, "dev", seed + 1)
    return {f"{BOOLQ}/train.jsonl": jsonl(boolq_rows(n_train, "train", seed)), f"{BOOLQ}/dev.jsonl": jsonl(dev),
            CONTRAST: json.dumps(boolq_contrast(dev)).encode()}


# --------------------------------------------------------------------------- HellaSwag
def hellaswag_rows(n: int, split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [{"ind": k, "activity_label": f"Fixture activity {k % 4}", "ctx_a": f"A person starts {split} task {k}.",
             "ctx_b": "" if k % 5 == 4 else f"then the person picks tool {rng.randint(1, 9)}",
             "ctx": "unused", "split": split, "split_type": "indomain", "source_id": f"fixture~{split}~{k}",
             "endings": [f"and finishes step {j} of task {k}." for j in range(4)], "label": rng.randint(0, 3)}
            for k in range(n)]


def hellaswag_files(n_train: int = 8, n_val: int = 10, seed: int = 6) -> dict[str, bytes]:
    return {f"{HELLASWAG}/hellaswag_train.jsonl": jsonl(hellaswag_rows(n_train, "train", seed)),
            f"{HELLASWAG}/hellaswag_val.jsonl": jsonl(hellaswag_rows(n_val, "val", seed + 1))}


# --------------------------------------------------------------------------- TruthfulQA
TRUTHFUL_QA_HEADER = ["Type", "Category", "Question", "Best Answer", "Correct Answers", "Incorrect Answers", "Source"]


def truthful_qa_rows(n: int, seed: int = 7) -> list[list[str]]:
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        best = rng.choice(["Nothing happens", "It depends on the fixture", "Zero fixtures", "Yes, fixture " + str(k)])
        wrong = "; ".join(f"Fixture claim {k}.{j}" for j in range(rng.randint(1, 4)))
        rows.append(["Adversarial", f"Fixture category {k % 3}", f" What happens with fixture {k}? ",
                     best, f"{best}; Another true fixture", wrong + ("; " if k % 4 == 0 else ""),
                     f"https://example.org/fixture/{k}"])
    return rows


def truthful_qa_csv(n: int = 25) -> bytes:
    return csv_text(TRUTHFUL_QA_HEADER, truthful_qa_rows(n))


# --------------------------------------------------------------------------- CivilComments
CIVIL_HEADER = ["", "id", "comment_text", "split", "toxicity", "severe_toxicity", "obscene", "identity_attack",
                "insult", "threat", *IDENTITIES, "identity_any"]


def civil_rows(n: int, seed: int = 8) -> list[list[str]]:
    """``n`` rows: splits cycle train/val/test, every identity column scored in [0, 1] or missing."""
    rng = random.Random(seed)
    rows = []
    for k in range(n):
        split = ("train", "val", "test")[k % 3]
        toxicity = round(rng.random(), 6)
        scores = ["" if rng.random() < 0.2 else str(round(rng.random(), 6)) for _ in IDENTITIES]
        comment = "NA" if k == 7 else f"Generated comment {k}, about fixture \"{k % 5}\".\nA second line."
        rows.append([str(k), str(100000 + k), comment, split, str(toxicity), "0.0", "0.0", "0.0", "0.0", "0.0",
                     *scores, "1" if any(s and float(s) >= 0.5 for s in scores) else "0"])
    return rows


def civil_csv(n: int = 60) -> bytes:
    return csv_text(CIVIL_HEADER, civil_rows(n))


# --------------------------------------------------------------------------- the tree
def classic_files() -> dict[str, bytes]:
    return {**boolq_files(), **hellaswag_files(), TRUTHFUL_QA: truthful_qa_csv(), CIVIL: civil_csv()}


def classic_source_tree(root: Path) -> Path:
    """HELM Lite's shared sources (small) and Classic's own, under ``root/<host>/<path>``."""
    source_tree(root, small=True)
    for path, data in classic_files().items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(data)
    return root
