"""FinQA (Chen et al., 2021): write the program, in FinQA's small DSL, that computes the answer to a question
over a financial report's text and table, as HELM's Finance board runs it (``fin_qa_scenario.py``).

The source is FinQA's ``dataset/train.json`` and ``dataset/test.json`` at HELM's commit (the dev split is not
used). The input is ``Pre-table text:`` (the ``pre_text`` lines), ``Table:`` (the table as ``json.dumps``
writes it), ``Post-table text:`` and ``Question:``, one per line; the reference is ``qa.program``. The
instance keeps ``qa.exe_ans`` and the table in ``extra`` for the execution check (HELM keeps them as two
extra, incorrect references). Generation (``Program:``, 100 tokens, five examples), scored by HELM's
``program_accuracy`` (the main metric) and ``execution_accuracy`` (:mod:`helmflow.metrics.fin_qa`: the
program is interpreted as data, never run as Python).
"""

from __future__ import annotations

import json

from helmflow.records import Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_source
from helmflow.scenarios.helm_lite import generation_spec

COMMIT = "0f16e2867befa6840783e58be38c9efb9229d742"
SPLITS = ("train", "test")
# our wording of HELM's instructions: what the DSL is, its ten operations and the answer format
INSTRUCTIONS = """\
Each example below is a financial report (text before and after a table, and the table) and a question. \
Write the program that computes the answer, in this domain-specific language, and nothing else.

A program is a sequence of steps separated by ", ". Each step is an operation applied to two arguments: \
op(arg1, arg2). An argument is a number taken from the report, a constant such as const_100, or #n, the \
result of step n (steps count from 0).

Operations on numbers: add(a, b) is a + b; subtract(a, b) is a - b; multiply(a, b) is a * b; \
divide(a, b) is a / b; exp(a, b) is a to the power b; greater(a, b) says whether a > b.
Operations on a table row, named by its first cell (the second argument is none): table_sum, table_average, \
table_max, table_min.

For example, "divide(9413, 20.01), divide(8249, 9.48), subtract(#0, #1)" divides two pairs of numbers and \
subtracts the second quotient from the first."""


def helm_input(row: dict) -> str:
    """HELM's input text: the report's parts under their labels, then the question."""
    return "\n".join([
        "Pre-table text: " + "\n".join(row["pre_text"]),
        "Table: " + json.dumps(row["table"]),
        "Post-table text: " + "\n".join(row["post_text"]),
        "Question: " + row["qa"]["question"],
    ])


@scenario("fin_qa")
class FinQA(Scenario):
    VERSION = "1"
    GIT_REPO = "czyssrs/FinQA"
    GIT_COMMIT = COMMIT
    description = "FinQA: the DSL program answering a question over a financial report (HELM Finance)."
    main_metric = "program_accuracy"
    metrics = ["fin_qa", "efficiency"]
    default_adapter = generation_spec("", "Program", 100, ["\n"], instructions=INSTRUCTIONS)
    helm_wording = ("the unlabelled report, Program:, 100 tokens and five in-context examples follow HELM's run spec; "
                    "the instructions describing the DSL are helmflow's own wording (they name the table operations "
                    "with underscores, as FinQA's evaluator reads them; HELM's text writes table-max)")
    helm_differences = ("fin_qa: the predicted program is interpreted as data (FinQA's evaluator has sympy parse the "
                        "expression strings it builds); the same expressions, so the same program_accuracy",)

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{split}.json", url=self.git_url(f"dataset/{split}.json"), sha256_unknown=True)
                for split in SPLITS]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for split in SPLITS:
            url = files[f"{split}.json"]
            try:
                rows = json.loads(read_source(self.name, url))
            except ValueError as exc:
                raise ScenarioError(f"scenario {self.name!r}: {url} is not JSON: {exc}") from None
            for k, row in enumerate(rows if isinstance(rows, list) else [None]):
                try:
                    text, program = helm_input(row), str(row["qa"]["program"])
                    extra = {"exe_ans": str(row["qa"]["exe_ans"]), "table": row["table"], "finqa_id": row.get("id", "")}
                except (KeyError, TypeError, AttributeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} item {k}: not a FinQA row "
                                        f"(missing or malformed {exc})") from None
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=text),
                                    references=[Reference(text=program, correct=True)], extra=extra))
        return out
