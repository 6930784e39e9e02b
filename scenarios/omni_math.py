"""Omni-MATH (KbsdJames/Omni-MATH, test.jsonl): 4,428 olympiad problems, answer in ``\\boxed{}``.

Instances follow HELM's ``OmniMATHScenario``: one ``test`` instance per line in file order, ids
``id<line index>`` (HELM's ``with_instance_ids``), input = the problem, one correct reference = the
answer; ``extra`` keeps domain, difficulty and source (the reference solution is not used). HELM's
run spec: generation with its instruction to reason first and box the final answer, no prefixes,
temperature 0, max_tokens 4096. Scored by the ``omni_math`` judge template (main) and, beside it,
the rule-based ``omni_math_rule`` (math-verify), which needs no judge.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import parse_jsonl_row, read_jsonl_lines

REPO = "KbsdJames/Omni-MATH"
REVISION = "40ba231d8f16e29ecd40e6407e2c8640145a8f62"
FILENAME = "test.jsonl"
INSTRUCTIONS = ("Answer the question, giving your reasoning beforehand. "
                "Wrap the final answer with the \\boxed{} command.")


class OmniMATHRow(BaseModel):
    model_config = ConfigDict(extra="ignore")
    domain: list[StrictStr]
    difficulty: StrictFloat | StrictInt
    problem: StrictStr
    solution: StrictStr
    answer: StrictStr
    source: StrictStr


@scenario("omni_math")
class OmniMATH(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    description = "Omni-MATH: olympiad-level math; an LLM jury checks the boxed answer (a rule-based check beside it)."
    main_metric = "omni_math_accuracy"
    metrics = ["omni_math", "omni_math_rule", "efficiency"]
    helm_wording = ("the instruction line (reason first, wrap the final answer in \\boxed{}) is helmflow's wording of "
                    "HELM's instruction, written from its description and not compared byte for byte; the problem "
                    "follows it on the next line as in HELM. omni_math.instructions in a prompts file replaces it")
    default_adapter = AdapterSpec(
        method="generation",
        instructions=INSTRUCTIONS,
        input_prefix="",
        output_prefix="",
        # HELM sets these instructions without format_instructions' trailing newline, so its prompt is
        # instructions + "\n" + problem + "\n"; the layout here already ends instructions with "\n".
        instance_prefix="",
        max_train_instances=0,
        generation=GenerationParams(max_tokens=4096, temperature=0.0, num_outputs=1),
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.hub_url(FILENAME))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        lines = read_jsonl_lines("omni_math", url)
        return [self._instance(url, index, number, line) for index, (number, line) in enumerate(lines)]

    @staticmethod
    def _instance(url: str, index: int, number: int, line: str) -> Instance:
        where = f"scenario 'omni_math': {url} line {number}"
        row = parse_jsonl_row(where, line, OmniMATHRow)
        return Instance(
            id=f"id{index}",
            split="test",
            input=Input(text=row.problem),
            references=[Reference(text=row.answer, correct=True)],
            extra={"domain": row.domain, "difficulty": float(row.difficulty), "source": row.source},
        )
