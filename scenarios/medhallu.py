"""MedHallu (Pandit et al., 2025): is an answer to a PubMedQA question factual or hallucinated, as MedHELM runs
it (``medhallu_scenario.py``, ``get_medhallu_spec``).

HELM loads the Hub dataset ``UTAustin-AIHealth/MedHallu``, config ``pqa_labeled``, split ``train``, at revision
``51506045…``. Each row makes two test instances, in this order: the ``Ground Truth`` answer (label ``0``) and the
``Hallucinated Answer`` (label ``1``); the input is ``World Knowledge: <Knowledge>``, ``Question: <Question>`` and
``Answer: <answer>``, separated by blank lines, ending with a newline. Generation (5 tokens, no stop sequence),
exact match against the label.
"""

from __future__ import annotations

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import read_parquet_source
from helmflow.scenarios.medhelm import WORDING, generation

REVISION = "515060458a945c633debc6fd5baac7764416b724"
PATH = "pqa_labeled/train-00000-of-00001.parquet"  # the Hub's Parquet layout of the config [unverified]
COLUMNS = {"Question": "string", "Knowledge": "string", "Ground Truth": "string", "Hallucinated Answer": "string"}
INSTRUCTIONS = (
    "You are a medical expert judging answers. Given world knowledge, a question and an answer, decide whether the "
    "answer contains non-factual or hallucinated information: it misreads the question, gives incomplete "
    "information (only saying what is not true), misattributes a mechanism or pathway, or invents methods, "
    "statistics or outcomes.\n\nReply with one integer and nothing else: 0 if the answer is factual, 1 if it is "
    "hallucinated."
)
OUTPUT_NOUN = "Reply 0 (factual) or 1 (hallucinated), the integer alone\n\nYour judgment"


def helm_input(knowledge: str, question: str, answer: str) -> str:
    return f"World Knowledge: {knowledge}\n\nQuestion: {question}\n\nAnswer: {answer}\n"


@scenario("medhallu")
class MedHallu(Scenario):
    VERSION = "1"
    HUB_REPO = "UTAustin-AIHealth/MedHallu"
    HUB_REVISION = REVISION
    description = "MedHallu: tell a factual answer from a hallucinated one to a biomedical question (MedHELM)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "efficiency"]
    default_adapter = generation(INSTRUCTIONS, None, OUTPUT_NOUN, 5, stop=())
    helm_wording = WORDING
    helm_differences = ("medhallu: the pqa_labeled config's Parquet file at HELM's Hub revision (its path in the "
                        "repository is unverified), pinned by the sha256 recorded at first fetch",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="train.parquet", url=self.hub_url(PATH), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for row in read_parquet_source(self.name, files["train.parquet"], COLUMNS).to_pylist():
            for answer, label in ((row["Ground Truth"], "0"), (row["Hallucinated Answer"], "1")):
                out.append(Instance(id=f"id{len(out)}", split="test",
                                    input=Input(text=helm_input(row["Knowledge"], row["Question"], answer)),
                                    references=[Reference(text=label, correct=True)]))
        return out
