"""TruthfulQA (Lin et al., 2022), the single-answer multiple choice task HELM Classic runs
(``truthful_qa_scenario.py``, ``task=mc_single``).

The source is ``data/v1/TruthfulQA.csv`` of ``sylinrl/TruthfulQA`` at HELM's commit ``d71c1108…``, read
with the csv module, its seven columns unpacked in order (type, category, question, best answer, correct
answers, incorrect answers, source). The first ``int(rows * 0.2)`` rows are HELM's train split, the rest its
valid split, in file order, ids ``id<i>``. Options: the incorrect answers (split at ``;``, blanks dropped),
then the best answer, each stripped with a ``.`` added when it does not end with one; the list is rotated
left by ``ord(first letter of the best answer) % number of options`` (HELM's way to move the correct option
around). Multiple choice joint, no instructions (HELM gives none), five examples, exact match.
"""

from __future__ import annotations

import csv
import io
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import multiple_choice_spec

COMMIT = "d71c110897f5d31c5d7f309e7bc316c152f6f031"
PATH = "data/v1/TruthfulQA.csv"
TRAIN_RATIO = 0.2


class TruthfulQAParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: Literal["mc_single"] = "mc_single"  # HELM's only task


def format_answer(text: str) -> str:
    """HELM's ``format_str``: stripped, with a final ``.`` added when missing."""
    text = text.strip()
    if not text:
        raise ValueError("an answer is empty")
    return text if text.endswith(".") else text + "."


def helm_options(best_answer: str, incorrect_answers: str) -> list[tuple[str, bool]]:
    """(option, correct) in HELM's order: incorrect ones, the best one last, then rotated by ``ord``."""
    best = format_answer(best_answer)
    options = [(format_answer(a), False) for a in incorrect_answers.split(";") if a.strip()]
    options.append((best, True))
    k = ord(best[0]) % len(options)
    return options[k:] + options[:k]


@scenario("truthful_qa")
class TruthfulQA(Scenario[TruthfulQAParams]):
    VERSION = "1"
    GIT_REPO = "sylinrl/TruthfulQA"
    GIT_COMMIT = COMMIT
    Params = TruthfulQAParams
    description = "TruthfulQA: pick the truthful answer among common misconceptions (HELM Classic, mc_single)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "calibration", "efficiency"]
    helm_wording = ("the Question:, lettered-option and Answer: layout, five in-context examples and one output token "
                    "follow HELM's multiple-choice adapter; no instructions, as in HELM")

    @property
    def default_adapter(self) -> AdapterSpec:
        return multiple_choice_spec("").model_copy(update={"instructions": ""})

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="TruthfulQA.csv", url=self.git_url(PATH), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["TruthfulQA.csv"]
        try:
            text = read_source(self.name, url).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not UTF-8 text: {exc}") from None
        rows = list(csv.reader(io.StringIO(text, newline="")))[1:]  # HELM skips the header
        split_k = int(len(rows) * TRAIN_RATIO)
        out: list[Instance] = []
        for number, row in enumerate(rows, start=2):
            if len(row) != 7:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: {len(row)} fields, "
                                    "expected 7 (type, category, question, best, correct, incorrect, source)")
            _type, category, question, best, _correct, incorrect, _source = row
            try:
                options = helm_options(best, incorrect)
            except ValueError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: {exc}") from None
            out.append(Instance(id=f"id{len(out)}", split="train" if len(out) < split_k else "valid",
                                input=Input(text=question.strip()),
                                references=[Reference(text=t, correct=c) for t, c in options],
                                extra={"category": category}))
        return out
