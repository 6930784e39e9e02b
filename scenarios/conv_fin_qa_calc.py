"""ConvFinQA calculations (Chen et al., 2022), as HELM's Enterprise board runs them
(``conv_fin_qa_calc_scenario.py``): the last question of a conversation over a financial report's table.

The source is ConvFinQA's ``data.zip`` at HELM's commit; HELM reads ``train_turn.json`` (train) and
``dev_turn.json`` (valid, its main split), JSON arrays of turns. The input is ``Table:`` and the table as
``| a | b |`` lines, then ``Text:`` and the annotation's ``gold_ind``/``gold_inds`` entries whose key holds
"text" (concatenated, when any), then the conversation so far (``Question: q`` / ``Answer: a`` from
``cur_dial`` and ``exe_ans_list``) ending at the last question; the reference is ``str(exe_ans)``.
Generation (5 tokens, five examples), scored by HELM's ``float_equiv``.
"""

from __future__ import annotations

import json
from typing import Any

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

COMMIT = "cf3eed2d5984960bf06bb8145bcea5e80b0222a6"
ZIP_URL = f"https://github.com/czyssrs/ConvFinQA/raw/{COMMIT}/data.zip"
FILES = (("train_turn.json", "train"), ("dev_turn.json", "valid"))
# our wording of HELM's instructions: answer the last question from the table, the answer alone
INSTRUCTIONS = "Answer the last question from the table above it. Give only the answer, without explanation."


def helm_input(row: dict[str, Any], sep: str = "\n") -> str:
    """HELM's ``convert_to_instance`` input text."""
    table = sep.join("| " + " | ".join(str(cell) for cell in r) + " |" for r in row["table"])
    text = f"Table: {sep}{table}{sep}{sep}"
    annotation = row["annotation"]
    facts = annotation.get("gold_ind", annotation.get("gold_inds", {}))
    table_text = "".join(fact for kind, fact in facts.items() if "text" in kind)
    if table_text:
        text += f"Text: {sep}{table_text}{sep}{sep}"
    dialogue = annotation["cur_dial"]
    for i, question in enumerate(dialogue):
        if i < len(dialogue) - 1:
            text += f"Question: {question}{sep}Answer: {annotation['exe_ans_list'][i]}{sep}"
        else:
            text += f"Question: {question}"
    return text


@scenario("conv_fin_qa_calc")
class ConvFinQACalc(Scenario):
    VERSION = "1"
    SOURCE_REVISION = COMMIT
    description = "ConvFinQA: the last question of a conversation over a financial table (HELM Enterprise)."
    main_metric = "float_equiv"
    metrics = ["float_equiv", "exact_match", "efficiency"]
    default_adapter = generation_spec("", "Answer", 5, ["\n"], instructions=INSTRUCTIONS)
    helm_wording = ("the Answer: layout, 5 tokens and five in-context examples follow HELM's generation adapter; "
                    "the instructions are helmflow's own sentence")
    helm_differences = ("conv_fin_qa_calc: data.zip is read at HELM's commit, pinned by the sha256 of the two files "
                        "read (recorded at first fetch); their paths inside the zip (data/...) are unverified",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.archive_url(ZIP_URL, f"data/{name}"), sha256_unknown=True)
                for name, _ in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, split in FILES:
            url = files[name]
            try:
                rows = json.loads(read_source(self.name, url))
            except ValueError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
            if not isinstance(rows, list):
                raise ScenarioError(f"scenario {self.name!r}: {url} is not a JSON array of turns")
            for k, row in enumerate(rows):
                try:
                    text, answer = helm_input(row), str(row["annotation"]["exe_ans"])
                except (KeyError, TypeError, IndexError, AttributeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} item {k}: not a ConvFinQA turn "
                                        f"(missing or malformed {exc})") from None
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=text),
                                    references=[Reference(text=answer, correct=True)]))
        return out
