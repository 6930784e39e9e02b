"""IFEval (google/IFEval): 541 prompts with verifiable instructions, scored by rule, as HELM runs it.

HELM's ``IFEvalScenario``: one ``test`` instance per row, in file order, input = the prompt stripped,
no references; ``extra`` keeps the row's ``key``, ``instruction_id_list`` and ``kwargs`` (null
kwargs dropped: they mean absent) for the ``ifeval`` metric. Every instruction's kwargs are checked
against its checker when the data is loaded, so a bad row fails before any model is queried.
HELM's run spec: generation with empty input and output prefixes (its other AdapterSpec defaults
stand, so the prompt is the stripped prompt and the input suffix, one newline), temperature 0,
max_tokens 4096, one output.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from helmflow.metrics.ifeval_checkers import InstructionError, parse_kwargs
from helmflow.records import AdapterSpec, GenerationParams, Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import check_unique_ids, parse_jsonl_row, read_jsonl_lines

REPO = "google/IFEval"
REVISION = "966cd89545d6b6acfd7638bc708b98261ca58e84"
FILENAME = "ifeval_input_data.jsonl"


class IFEvalRow(BaseModel):  # type: ignore[no-redef]  # pydantic plugin: a field named kwargs
    model_config = ConfigDict(extra="ignore")
    key: StrictInt
    prompt: StrictStr
    instruction_id_list: list[StrictStr] = Field(min_length=1)
    kwargs: list[dict[str, Any] | None]


@scenario("ifeval")
class IFEval(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    description = "IFEval: prompts with verifiable instructions (length, format, keywords, case), rule-scored."
    main_metric = "ifeval_strict_accuracy"
    metrics = ["ifeval", "efficiency"]
    helm_wording = "the prompt is the dataset's prompt with nothing added, as in HELM: the same bytes"
    default_adapter = AdapterSpec(
        method="generation",
        input_prefix="",
        output_prefix="",
        max_train_instances=0,  # no train split: zero-shot either way
        generation=GenerationParams(max_tokens=4096, temperature=0.0, num_outputs=1),
    )

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.hub_url(FILENAME))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        lines = read_jsonl_lines("ifeval", url)
        instances = [self._instance(url, number, line) for number, line in lines]
        check_unique_ids(f"scenario 'ifeval': {url}", [(n, i.id) for (n, _), i in zip(lines, instances)])
        return instances

    @staticmethod
    def _instance(url: str, number: int, line: str) -> Instance:
        where = f"scenario 'ifeval': {url} line {number}"
        row = parse_jsonl_row(where, line, IFEvalRow)
        if len(row.kwargs) != len(row.instruction_id_list):
            raise ScenarioError(
                f"{where} (key {row.key}): {len(row.instruction_id_list)} instructions but {len(row.kwargs)} kwargs"
            )
        kwargs = [{k: v for k, v in (kw or {}).items() if v is not None} for kw in row.kwargs]
        for instruction_id, kw in zip(row.instruction_id_list, kwargs):
            try:
                parse_kwargs(instruction_id, kw)
            except InstructionError as exc:
                raise ScenarioError(f"{where} (key {row.key}): {exc}") from None
        return Instance(
            id=str(row.key),
            split="test",
            input=Input(text=row.prompt.strip()),
            extra={"key": row.key, "instruction_id_list": row.instruction_id_list, "kwargs": kwargs},
        )
