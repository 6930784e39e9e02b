"""PubMedQA (Jin et al., 2019): a yes/no/maybe research question over a PubMed abstract, as MedHELM runs it
(``pubmed_qa_scenario.py``, ``get_pubmed_qa_spec``).

HELM reads ``data/ori_pqal.json`` of ``pubmedqa/pubmedqa`` at its commit (the 1,000 expert-labelled
questions, all as its test split; the file is a JSON object keyed by PubMed id, read in order). The input
is ``Context: `` then one ``<Label>. <context>`` line per abstract section (label title-cased), a blank line,
and ``Question: <question>\\n``; the references are yes, no and maybe, the ``final_decision`` correct.
Multiple choice joint, zero-shot (HELM's ``Question:`` label goes before an input that itself begins
with ``Context:``).
"""

from __future__ import annotations

import json

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.medhelm import WORDING, multiple_choice

COMMIT = "1f00b98d5cc626844bf8c4ca513b6e62c40071ec"
CHOICES = ("yes", "no", "maybe")
INSTRUCTIONS = "Answer A for yes, B for no or C for maybe, with the letter alone on one line and nothing else."


def helm_input(example: dict) -> str:
    labels, contexts = example["LABELS"], example["CONTEXTS"]
    if len(labels) != len(contexts):
        raise ValueError(f"{len(contexts)} CONTEXTS but {len(labels)} LABELS")
    background = "\n".join(f"{label.title()}. {context}" for label, context in zip(labels, contexts, strict=True))
    return f"Context: {background}\n\nQuestion: {example['QUESTION']}\n"


@scenario("pubmed_qa")
class PubMedQA(Scenario):
    VERSION = "1"
    GIT_REPO = "pubmedqa/pubmedqa"
    GIT_COMMIT = COMMIT
    description = "PubMedQA: yes, no or maybe to a research question over a PubMed abstract (MedHELM)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = multiple_choice(INSTRUCTIONS, "Question", "Answer")
    helm_wording = WORDING
    helm_differences = ("pubmed_qa: ori_pqal.json is read at HELM's commit, pinned by the sha256 recorded at first "
                        "fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="ori_pqal.json", url=self.git_url("data/ori_pqal.json"), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["ori_pqal.json"]
        try:
            examples = json.loads(read_source(self.name, url))
        except json.JSONDecodeError as exc:
            raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
        out: list[Instance] = []
        for pmid, example in examples.items():
            try:
                text = helm_input(example)
                answer = example["final_decision"]
            except (KeyError, TypeError, ValueError) as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url}: entry {pmid}: {exc!r}") from None
            if answer not in CHOICES:
                raise ScenarioError(f"scenario {self.name!r}: {url}: entry {pmid}: final_decision {answer!r} "
                                    f"is not one of {', '.join(CHOICES)}")
            out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=text),
                                references=[Reference(text=c, correct=c == answer) for c in CHOICES],
                                extra={"pmid": pmid}))
        return out
