"""BoolQ (Clark et al., 2019): yes/no questions about a Wikipedia passage, as HELM Classic runs it
(``boolq_scenario.py``), with AllenAI's contrast sets (Gardner et al., 2020).

The sources are HELM's: the JSON Lines copies ``boolq/train.jsonl`` and ``boolq/dev.jsonl`` in the Hub
repository ``stanford-crfm/helm-scenarios`` (branch ``main``; Google's original bucket is gone) and
``BoolQ/boolq_perturbed.json`` of ``allenai/contrast-sets`` (branch ``main``). Rows ``{question, passage,
answer}``: train rows are HELM's train split, dev rows its valid split, in file order, ids ``id<i>``. The
input is the passage, a newline, ``Question: `` and the question stripped, Python-capitalised (first letter
upper, the rest lower, HELM's quirk) with ``?`` added; the reference is ``Yes`` or ``No``.

Contrast sets: for each question of the JSON's ``data`` (its first element is skipped, as HELM does), the
perturbed questions whose answer differs from the original's; a valid instance whose raw question has any
carries them (``extra["contrast_inputs"]``, ``extra["contrast_references"]``), read by the ``contrast_sets``
perturbation (HELM's ``ContrastSetsPerturbation``). ``only_contrast`` keeps only those valid instances
(HELM's ``only_contrast=True`` entry). Generation, five examples, 5 tokens, stop at a newline;
quasi-exact match. Upstream publishes no checksums and both branches move: the pins are recorded at
first fetch.
"""

from __future__ import annotations

import json

from pydantic import BaseModel, ConfigDict

from helmflow.perturbations import CONTRAST_INPUTS, CONTRAST_REFERENCES
from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import parse_jsonl_row, read_jsonl_lines, read_source
from helmflow.scenarios.helm_lite import generation_spec

BASE_URL = "https://huggingface.co/datasets/stanford-crfm/helm-scenarios/resolve/main/boolq"
CONTRAST_URL = "https://raw.githubusercontent.com/allenai/contrast-sets/main/BoolQ/boolq_perturbed.json"
FILES: dict[str, Split] = {"train.jsonl": "train", "dev.jsonl": "valid"}  # HELM's split_to_filename
CONTRAST_FILE = "boolq_perturbed.json"
CLASSIC_METRICS = ["quasi_exact_match", "exact_match", "calibration", "efficiency"]
CLASSIC_WORDING = ("the Passage:/Answer: layout, the blank line between examples, five in-context examples and 5 "
                   "output tokens follow HELM's generation adapter; no instructions, as in HELM")


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")
    question: str
    passage: str
    answer: bool


class ContrastParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    only_contrast: bool = False  # HELM's only_contrast: the valid instances that have a contrast set, only


def yes_no(answer: str) -> str:
    return "Yes" if answer == "TRUE" else "No"


def helm_question(passage: str, question: str) -> str:
    """HELM's ``get_context``: ``<passage>\\nQuestion: <Question>?`` (str.capitalize, then ``?``)."""
    question = question.strip().capitalize()
    if not question or question.endswith("?"):
        raise ValueError(f"question {question!r} is empty or already ends with '?' (HELM asserts it does not)")
    return f"{passage}\nQuestion: {question}?"


def contrast_map(data: dict) -> dict[str, dict]:
    """HELM's contrast map: raw question -> original answer and the perturbed questions that flip it."""
    out: dict[str, dict] = {}
    for item in data["data"][1:]:  # HELM skips the first element
        question = item["question"]
        if question in out:
            raise ValueError(f"question {question!r} appears twice")
        original = yes_no(item["answer"])
        kept = [(p["perturbed_q"], yes_no(p["answer"])) for p in item["perturbed_questions"]
                if p["perturbed_q"] and yes_no(p["answer"]) != original]
        if kept:
            out[question] = {"original_answer": original, "questions": [q for q, _ in kept],
                             "answers": [a for _, a in kept]}
    return out


@scenario("boolq")
class BoolQ(Scenario[ContrastParams]):
    VERSION = "1"
    SOURCE_REVISION = "helm-scenarios-main"
    Params = ContrastParams
    description = "BoolQ: yes/no questions about a Wikipedia passage (HELM Classic), with contrast sets."
    main_metric = "quasi_exact_match"
    metrics = CLASSIC_METRICS
    helm_wording = CLASSIC_WORDING
    helm_differences = ("boolq: HELM reads the main branches of stanford-crfm/helm-scenarios and "
                        "allenai/contrast-sets; here the files are pinned by their sha256 (recorded at first fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return generation_spec("Passage: ", "Answer", 5, ["\n"])

    def sources(self) -> list[DataSource]:
        return [*(DataSource(filename=name, url=self.web_url(f"{BASE_URL}/{name}"), sha256_unknown=True)
                  for name in FILES),
                DataSource(filename=CONTRAST_FILE, url=self.web_url(CONTRAST_URL), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        try:
            contrasts = contrast_map(json.loads(read_source(self.name, files[CONTRAST_FILE]).decode("utf-8")))
        except (ValueError, KeyError, TypeError) as exc:
            raise ScenarioError(f"scenario {self.name!r}: {files[CONTRAST_FILE]}: not HELM's contrast-set shape "
                                f"({type(exc).__name__}: {exc})") from None
        out: list[Instance] = []
        for name, split in FILES.items():
            url = files[name]
            for number, line in read_jsonl_lines(self.name, url):
                where = f"scenario {self.name!r}: {url} line {number}"
                row = parse_jsonl_row(where, line, Row)
                answer = "Yes" if row.answer else "No"
                contrast = contrasts.get(row.question) if split == "valid" else None
                if contrast is None and self.params.only_contrast and split == "valid":
                    continue
                extra: dict = {}
                try:
                    text = helm_question(row.passage, row.question)
                    if contrast is not None:
                        if contrast["original_answer"] != answer:
                            raise ValueError(f"the contrast set's original answer {contrast['original_answer']} "
                                             f"is not the row's {answer}")
                        extra = {CONTRAST_INPUTS: [helm_question(row.passage, q) for q in contrast["questions"]],
                                 CONTRAST_REFERENCES: [[a] for a in contrast["answers"]]}
                except ValueError as exc:
                    raise ScenarioError(f"{where}: {exc}") from None
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=text),
                                    references=[Reference(text=answer, correct=True)], extra=extra))
        return out
