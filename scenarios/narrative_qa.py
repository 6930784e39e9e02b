"""NarrativeQA (Kočiský et al., 2018), summaries setting: one question per story, as HELM Lite runs it.

The source is the GitHub archive of deepmind/narrativeqa's master branch (HELM's URL): its
``third_party/wikipedia/summaries.csv`` and ``qaps.csv``. HELM, for each split in the order train,
valid, test, groups that split's question rows by ``document_id`` (first appearance order) and keeps
one row per document drawn with Python's ``random.choice`` from one stream seeded 0 before the first
split (:func:`one_question_per_document`). The input is the stripped summary, a newline, ``Question:``
and the stripped question (``?`` added if missing); the references are answer1 and answer2. Generation,
five examples, 100 tokens, stop at a newline; F1 (max over the two answers), with HELM's exact match,
quasi-exact match, ROUGE-L, BLEU-1 and BLEU-4 recorded beside it. The pins are recorded at
first fetch (``sha256_unknown``; the branch moves).
"""

from __future__ import annotations

import random

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_csv_source
from helmflow.scenarios.helm_lite import GENERATION_WORDING, generation_spec

ZIP_URL = "https://github.com/deepmind/narrativeqa/archive/master.zip"
MEMBERS = {"summaries.csv": "narrativeqa-master/third_party/wikipedia/summaries.csv",
           "qaps.csv": "narrativeqa-master/qaps.csv"}
SPLITS = ["train", "valid", "test"]  # HELM's ALL_SPLITS order, which is also the draw order
SEED = 0


class LiteParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    follow_format: bool = False  # HELM's follow_format_instructions prefix/suffix (its instruction-following models)


def one_question_per_document(rows: list[dict[str, str]], rng: random.Random) -> list[dict[str, str]]:
    """HELM's draw for one split: rows grouped by document (first appearance order), one ``choice`` each."""
    by_document: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_document.setdefault(row["document_id"], []).append(row)
    return [rng.choice(group) for group in by_document.values()]


@scenario("narrative_qa")
class NarrativeQA(Scenario[LiteParams]):
    VERSION = "1"
    SOURCE_REVISION = "narrativeqa-master"
    Params = LiteParams
    description = "NarrativeQA: answer a question about a book or film summary (HELM Lite, one question per story)."
    main_metric = "f1_score"
    # HELM's list
    metrics = ["f1_score", "exact_match", "quasi_exact_match", "rouge_l", "bleu_1", "bleu_4", "efficiency"]
    helm_wording = GENERATION_WORDING
    helm_differences = ("narrative_qa: the master-branch zip HELM reads is pinned by the sha256 of summaries.csv "
                        "and qaps.csv (recorded at first fetch); HELM reads whatever the branch holds",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Passage: ", "Answer", 100, ["\n"], follow_format=self.params.follow_format)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.archive_url(ZIP_URL, member), sha256_unknown=True)
                for name, member in MEMBERS.items()]

    def load(self, files: dict[str, str]) -> list[Instance]:
        summaries = read_csv_source(self.name, files["summaries.csv"], ["document_id", "set", "summary"])
        questions = read_csv_source(self.name, files["qaps.csv"],
                                    ["document_id", "set", "question", "answer1", "answer2"])
        rng = random.Random(SEED)  # HELM's random.seed(0), once, before the first split
        out: list[Instance] = []
        for split in SPLITS:
            summary = {r["document_id"]: r["summary"] for r in summaries if r["set"] == split}
            for row in one_question_per_document([r for r in questions if r["set"] == split], rng):
                if row["document_id"] not in summary:
                    raise ScenarioError(f"scenario {self.name!r}: {files['qaps.csv']}: document {row['document_id']!r} "
                                        f"({split}) has no summary in summaries.csv")
                question = row["question"].strip()
                question += "" if question.endswith("?") else "?"
                out.append(Instance(
                    id=f"id{len(out)}", split=split,
                    input=Input(text=f"{summary[row['document_id']].strip()}\nQuestion: {question}"),
                    references=[Reference(text=row["answer1"], correct=True),
                                Reference(text=row["answer2"], correct=True)],
                    extra={"document_id": row["document_id"]},
                ))
        return out
