"""LSAT analytical reasoning (AR-LSAT, Zhong et al., 2021): five-option logic games, as HELM Classic runs them
(``lsat_qa_scenario.py``, run entry ``lsat_qa:task=all``, a targeted reasoning evaluation).

The source is HELM's: ``data/AR_{Training,Development,Test}Data.json`` of ``zhongwanjun/AR-LSAT`` (branch
``main``), read in that order as train, valid, test. Each passage's questions in file order become instances
(ids ``id<i>``): the input is the passage, a newline, ``Question: `` and the question (HELM's
``PassageQuestionInput``); the references the options, the correct one at ``ord(answer) - ord("A")``. ``task``
keeps the questions of one type, read from the question's third tag as HELM does (``grouping (distribution)`` is
``distribution grouping``; an empty tag is ``miscellaneous``; a subtype also counts as its type: ``simple
ordering`` is ``ordering``). HELM's multiple-choice adapter with its instructions (``The following are multiple
choice questions (with answers).``), ``Passage:`` / lettered options / ``Answer:``, five examples; quasi-exact
match. The branch moves and publishes no checksum: the pins are recorded at first fetch.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import multiple_choice_spec

BASE_URL = "https://raw.githubusercontent.com/zhongwanjun/AR-LSAT/main/data"
FILES: dict[str, Split] = {"AR_TrainingData.json": "train", "AR_DevelopmentData.json": "valid",
                           "AR_TestData.json": "test"}
QUESTION_TYPES: dict[str, list[str]] = {  # HELM's: type -> its subtypes
    "grouping": ["in/out grouping", "distribution grouping"],
    "ordering": ["simple ordering", "relative ordering", "complex ordering"],
    "assignment": ["determined assignment", "undetermined assignment"],
    "miscellaneous": [],
}
SUBTYPE_TO_TYPE = {sub: kind for kind, subs in QUESTION_TYPES.items() for sub in subs}


class LSATParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    task: Literal["all", "grouping", "ordering", "assignment", "miscellaneous"] = "all"


def question_types(tags: list[str]) -> list[str]:
    """HELM's ``get_question_types``: the third tag, normalised, and its type when it is a subtype."""
    question_type = tags[2].replace("grouping (distribution)", "distribution grouping") or "miscellaneous"
    types = [question_type.replace(" ", "_").replace("/", "_")]
    if (main := SUBTYPE_TO_TYPE.get(question_type)) is not None:
        types.append(main)
    return types


@scenario("lsat_qa")
class LSATQA(Scenario[LSATParams]):
    VERSION = "1"
    SOURCE_REVISION = "ar-lsat-main"
    Params = LSATParams
    description = ("LSAT analytical reasoning: five-option logic-game questions (HELM Classic's targeted reasoning "
                   "evaluation; quasi-exact match).")
    main_metric = "quasi_exact_match"
    metrics = ["quasi_exact_match", "exact_match", "calibration", "efficiency"]
    helm_wording = ("HELM's multiple-choice adapter: its instructions sentence, Passage:, lettered options and "
                    "Answer:, five in-context examples")
    helm_differences = ("lsat_qa: HELM reads the main branch of zhongwanjun/AR-LSAT; here the files are pinned by "
                        "their sha256 (recorded at first fetch); one output token and no top-5 logprobs, as the "
                        "board's other multiple-choice entries",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return multiple_choice_spec("").model_copy(update={
            "instructions": "The following are multiple choice questions (with answers).", "input_prefix": "Passage: "})

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.web_url(f"{BASE_URL}/{name}"), sha256_unknown=True)
                for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, split in FILES.items():
            url = files[name]
            try:
                passages = json.loads(read_source(self.name, url).decode("utf-8"))
                for p in passages:
                    for q in p["questions"]:
                        if self.params.task != "all" and self.params.task not in question_types(q["tags"]):
                            continue
                        answer = ord(q["answer"]) - ord("A")
                        options = q["options"]
                        if not 0 <= answer < len(options):
                            raise ValueError(f"answer {q['answer']!r} is not one of its {len(options)} options")
                        out.append(Instance(
                            id=f"id{len(out)}", split=split,
                            input=Input(text=f"{p['passage']}\nQuestion: {q['question']}"),
                            references=[Reference(text=o, correct=k == answer) for k, o in enumerate(options)]))
            except (ValueError, KeyError, TypeError, IndexError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url}: not AR-LSAT's shape "
                                    f"({type(exc).__name__}: {exc})") from None
        return out
