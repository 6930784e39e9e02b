"""FinanceBench (Islam et al., 2023): open-book questions on public companies' filings, each with the page of
evidence that answers it, as HELM's Finance board runs it (``financebench_scenario.py``).

The source is ``data/financebench_open_source.jsonl`` of GitHub ``patronus-ai/financebench`` at HELM's commit:
one row per question (``financebench_id``, ``question``, ``answer``, ``evidence``). The input is ``Evidence:``
(the first evidence's ``evidence_text_full_page``) and ``Question:``; the id is ``financebench_id``. Every row
is a test instance until HELM's ``random.seed(0)``, ``random.sample(range(n), 10)`` moves ten to train (the
in-context pool). Generation with HELM's own layout (``###`` between examples, ``Answer:`` after a blank
line, 300 tokens, stop at ``###``), judged by an LLM (:mod:`helmflow.metrics.financebench`); the main metric
is the share labelled ``correct_answer``.
"""

from __future__ import annotations

import random

from pydantic import BaseModel

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import check_unique_ids, parse_jsonl_row, read_jsonl_lines

COMMIT = "d7beebe5e739e0b806ab4443c1b3e23f51804acf"
TRAIN_COUNT, SEED = 10, 0
# our wording of HELM's instructions: answer the last question from the evidence, in one paragraph at most
INSTRUCTIONS = ("Answer the last question from the evidence given with it. Reply with one paragraph, one sentence "
                "or a sentence fragment, nothing more.\n")


class Evidence(BaseModel):
    evidence_text_full_page: str


class Row(BaseModel):
    financebench_id: str
    question: str
    answer: str
    evidence: list[Evidence]


def financebench_spec() -> AdapterSpec:
    """HELM's ``get_financebench_spec`` layout: blank-line input, ``\\nAnswer: ``, ``\\n###\\n`` between examples."""
    return AdapterSpec(
        method="generation", instructions=INSTRUCTIONS, input_prefix="\n", input_suffix="\n",
        output_prefix="\nAnswer: ", output_suffix="\n", instance_prefix="\n###\n", max_train_instances=5,
        generation=GenerationParams(max_tokens=300, temperature=0.0, stop=["###"], num_outputs=1),
    )


@scenario("financebench")
class FinanceBench(Scenario):
    VERSION = "1"
    GIT_REPO = "patronus-ai/financebench"
    GIT_COMMIT = COMMIT
    description = "FinanceBench: open-book questions on company filings, judged by an LLM (HELM Finance)."
    main_metric = "annotation_financebench_label_correct_answer"
    metrics = ["financebench", "efficiency"]
    default_adapter = financebench_spec()
    helm_wording = ("the Evidence:/Question: input, the ###-separated layout, Answer:, 300 tokens and five in-context "
                    "examples follow HELM's run spec; the instructions and the judge's template are helmflow's own "
                    "wording of HELM's")
    helm_differences = ("financebench: the judges are the board's (HELM's was GPT-4o 2024-05-13 alone), and the "
                        "judge template is helmflow's wording of HELM's three categories",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="financebench_open_source.jsonl",
                           url=self.git_url("data/financebench_open_source.jsonl"), sha256_unknown=True)]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["financebench_open_source.jsonl"]
        rows: list[tuple[int, Row]] = []
        for number, line in read_jsonl_lines(self.name, url):
            row = parse_jsonl_row(f"scenario {self.name!r}: {url} line {number}", line, Row)
            if not row.evidence:
                raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: no evidence")
            rows.append((number, row))
        check_unique_ids(f"scenario {self.name!r}: {url}", [(n, r.financebench_id) for n, r in rows])
        if len(rows) < TRAIN_COUNT:
            raise ScenarioError(f"scenario {self.name!r}: {url} has {len(rows)} questions; HELM moves {TRAIN_COUNT} "
                                "to train, so it needs at least that many")
        train = set(random.Random(SEED).sample(range(len(rows)), k=TRAIN_COUNT))
        return [Instance(id=row.financebench_id, split="train" if i in train else "test",
                         input=Input(text=f"Evidence: {row.evidence[0].evidence_text_full_page}\n"
                                          f"Question: {row.question}"),
                         references=[Reference(text=row.answer, correct=True)])
                for i, (_, row) in enumerate(rows)]
