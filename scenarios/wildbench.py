"""WildBench (allenai/WildBench, config v2, test split): 1,024 real user tasks, judged against checklists.

Instances follow HELM's ``WildBenchScenario``: one ``test`` instance per row in file order, ids
``id<row index>`` (HELM's ``with_instance_ids``); the input is the whole conversation
(``conversation_input``: earlier turns and the user's last message) as chat messages, which HELM's
chat adapter sends as they are. ``extra`` keeps the task's ``checklist`` (what the judge template
shows), its dataset ``id``, ``session_id``, ``intent`` and tags. HELM's run spec: chat, no
prefixes, temperature 0, max_tokens 2000, one output; scored by the ``wildbench`` judge template.

The data is under AI2's ImpACT Low-Risk license (derived from WildChat): read its terms before
mirroring it anywhere public.
"""

from __future__ import annotations

from typing import Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, ChatMessage, GenerationParams, Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_parquet_source

REPO = "allenai/WildBench"
REVISION = "7c05c1b4550282b2ed6a2e6ac5db069f1e07df5c"
FILENAME = "test-00000-of-00001.parquet"  # what HELM's load_dataset(config "v2", split "test") reads
COLUMNS = {"id": "string", "session_id": "string", "checklist": "list<string>"}


class WildBenchParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subset: Literal["v2"] = "v2"


def _is_conversation(t: pa.DataType) -> bool:
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)) or not pa.types.is_struct(t.value_type):
        return False
    names = {t.value_type.field(i).name for i in range(t.value_type.num_fields)}
    return {"role", "content"} <= names


@scenario("wildbench")
class WildBench(Scenario[WildBenchParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = WildBenchParams
    description = "WildBench: real user tasks (multi-turn chat), an LLM jury scores 1-10 against each task's checklist."
    main_metric = "wildbench_score_rescaled"
    metrics = ["wildbench", "efficiency"]
    helm_wording = "the conversation's messages are sent as they are with nothing added, as in HELM"
    default_adapter = AdapterSpec(
        method="chat",
        input_prefix="",
        output_prefix="",
        max_train_instances=0,
        generation=GenerationParams(max_tokens=2000, temperature=0.0, num_outputs=1),
    )

    def sources(self) -> list[DataSource]:
        subset = self.params.subset
        return [DataSource(filename=FILENAME, url=self.hub_url(f"{subset}/{FILENAME}"))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        table = read_parquet_source(self.name, url, COLUMNS)
        if ("conversation_input" not in table.schema.names
                or not _is_conversation(table.schema.field("conversation_input").type)):
            raise ScenarioError(
                f"scenario 'wildbench': {url}: column 'conversation_input' is missing or not a list of "
                f"{{role, content}} structs"
            )
        return [self._instance(url, index, row) for index, row in enumerate(table.to_pylist())]

    @staticmethod
    def _instance(url: str, index: int, row: dict) -> Instance:
        where = f"scenario 'wildbench': {url}: row {index} (id {row['id']!r})"
        turns = row["conversation_input"] or []
        if not turns or turns[-1].get("role") != "user":
            raise ScenarioError(f"{where}: conversation_input must end with a user turn")
        bad = sorted({t.get("role") for t in turns} - {"user", "assistant"}, key=str)
        if bad:
            raise ScenarioError(f"{where}: conversation_input has roles {bad}; expected user and assistant")
        return Instance(
            id=f"id{index}",
            split="test",
            input=Input(messages=[ChatMessage(role=t["role"], content=t["content"] or "") for t in turns]),
            extra={
                "checklist": list(row["checklist"] or []),
                "wildbench_id": row["id"],
                "session_id": row["session_id"],
                "intent": row.get("intent"),
                "primary_tag": row.get("primary_tag"),
                "secondary_tags": list(row.get("secondary_tags") or []),
            },
        )
