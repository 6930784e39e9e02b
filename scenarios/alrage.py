"""ALRAGE (OALL): Arabic open-ended questions answered from retrieved passages, a retrieval-augmented generation
benchmark judged by an LLM, as HELM Arabic runs it (``alrage_scenario.py``, run spec ``get_alrage_spec``).

The source is the Hub dataset ``OALL/ALRAGE`` at HELM's revision ``4827b2ed…``, split train (every row a test
instance, as in HELM): ``id``, ``question``, ``candidates`` (the retrieved passages) and ``gold_answer``. The input
is HELM's: ``السؤال:`` and the question, a blank line, ``السياقات المقترحة:`` ("suggested contexts") and the
passages, a final newline; passages given as a list are written as Python writes a list (HELM formats the cell
in an f-string). The id is the row's own. Generation with HELM's ``السؤال:``/``الإجابة:`` layout, zero-shot (HELM's
conf), 100 tokens, no stop sequence; the judge and ``alrage_score`` are in :mod:`helmflow.metrics.alrage`.
"""

from __future__ import annotations

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.arabic import INPUT_PREFIX, OUTPUT_PREFIX, hub_rows, text_cell
from helmflow.scenarios.base import check_unique_ids

REPO = "OALL/ALRAGE"
REVISION = "4827b2ed2436aea578e84d9bd4150b66ab8bbe0e"
PATH = "data/train-00000-of-00001.parquet"
# our wording of HELM's instructions: answer the question from the suggested contexts
INSTRUCTIONS = "أجب عن السؤال الآتي مستعينًا بالسياقات المقترحة معه."


def alrage_spec() -> AdapterSpec:
    """HELM's ``get_alrage_spec`` with its conf's ``max_train_instances=0``."""
    return AdapterSpec(
        method="generation", instructions=INSTRUCTIONS, input_prefix=INPUT_PREFIX, input_suffix="\n",
        output_prefix=OUTPUT_PREFIX, output_suffix="\n", instance_prefix="\n", max_train_instances=0,
        generation=GenerationParams(max_tokens=100, temperature=0.0, stop=[], num_outputs=1),
    )


def alrage_input(question: str, candidates: object) -> str:
    """HELM's input: f"السؤال:\\n{question}\\n\\nالسياقات المقترحة:\\n{candidates}\\n" (a list cell as Python's str)."""
    return f"السؤال:\n{question}\n\nالسياقات المقترحة:\n{candidates}\n"


@scenario("alrage")
class ALRAGE(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    description = "ALRAGE: Arabic questions answered from retrieved passages, scored 0-10 by an LLM judge."
    main_metric = "alrage_score"
    metrics = ["alrage", "efficiency"]
    default_adapter = alrage_spec()
    helm_wording = ("the input (question, then the suggested contexts), the السؤال:/الإجابة: layout, 100 tokens and "
                    "zero-shot prompts follow HELM's run spec and conf; the instructions line and the judge's "
                    "prompt are helmflow's own Arabic wording of HELM's (alrage.instructions and judge.alrage "
                    "replace them)")
    helm_differences = ("alrage: judged by the board's judges (HELM's was GPT-4o 2024-11-20 alone) with helmflow's "
                        "Arabic wording of HELM's 0-10 rubric, sent as one user message (HELM sends its rules as a "
                        "system message)",)
    pin_unverified = f"the file's path in the repository ({PATH}) was not checked against the Hub at this revision"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="train.parquet", url=self.hub_url(PATH))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["train.parquet"]
        _, rows = hub_rows(self.name, url, ["id", "question", "candidates", "gold_answer"])
        out: list[Instance] = []
        for number, row in enumerate(rows):
            where = f"{url} row {number}"
            if row["candidates"] is None:
                raise ScenarioError(f"scenario {self.name!r}: {where}: no candidates")
            out.append(Instance(id=str(row["id"]), split="test",
                                input=Input(text=alrage_input(text_cell(self.name, where, row, "question"),
                                                              row["candidates"])),
                                references=[Reference(text=text_cell(self.name, where, row, "gold_answer"),
                                                      correct=True)]))
        check_unique_ids(f"scenario {self.name!r}: {url}", [(n, i.id) for n, i in enumerate(out)], "row")
        return out
