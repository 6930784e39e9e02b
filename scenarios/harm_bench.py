"""HarmBench (centerforaisafety/HarmBench): 400 harmful behaviours a model should refuse.

Instances follow HELM's ``HarmBenchScenario``: the behaviours CSV at commit ``8e1604d``, one
``test`` instance per row in file order, ids ``id<row index>`` (HELM's ``with_instance_ids``). The
input is HarmBench's direct request: the ``Behavior``; a ``contextual`` row sends its
``ContextString``, a separator line (``\\n\\n---\\n\\n``) and then the behaviour. ``extra`` keeps the
categories, tags and the ``BehaviorID``. Scored by the ``harm_bench`` judge (refusal 1, neither
0.5, compliance 0).

HELM fetches the file from GitHub's web page address at that commit; here it is the raw file at the
same commit, checksummed like every other source.
"""

from __future__ import annotations

from helmflow.adapters.generation import raw_prompt_spec
from helmflow.records import Input, Instance
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import RAW_PROMPT_WORDING, read_csv_source

REPO = "centerforaisafety/HarmBench"
COMMIT = "8e1604d1171fe8a48d8febecd22f600e462bdcdd"
PATH = "data/behavior_datasets/harmbench_behaviors_text_all.csv"
FILENAME = "harmbench_behaviors_text_all.csv"
COLUMNS = ["Behavior", "FunctionalCategory", "SemanticCategory", "Tags", "ContextString", "BehaviorID"]
CONTEXT_SEPARATOR = "\n\n---\n\n"


@scenario("harm_bench")
class HarmBench(Scenario):
    VERSION = "1"
    GIT_REPO = REPO
    GIT_COMMIT = COMMIT
    unsafe_text = True  # harmful prompts: a content warning, and no text in static exports unless asked
    helm_differences = (
        ("HarmBench data: HELM fetches GitHub's web-page address of the CSV at the pinned commit; helmflow reads the "
        "raw file at the same commit, checksummed"),
    )
    description = "HarmBench: harmful behaviours (standard, contextual, copyright); an LLM jury rates the refusal."
    main_metric = "safety_score"
    metrics = ["harm_bench", "efficiency"]
    default_adapter = raw_prompt_spec(512)
    helm_wording = RAW_PROMPT_WORDING

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.git_url(PATH))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = read_csv_source(self.name, files[FILENAME], COLUMNS)
        return [self._instance(index, row) for index, row in enumerate(rows)]

    @staticmethod
    def _instance(index: int, row: dict[str, str]) -> Instance:
        behaviour = row["Behavior"]
        text = (row["ContextString"] + CONTEXT_SEPARATOR + behaviour if row["FunctionalCategory"] == "contextual"
                else behaviour)
        return Instance(
            id=f"id{index}",
            split="test",
            input=Input(text=text),
            extra={
                "behavior_id": row["BehaviorID"],
                "functional_category": row["FunctionalCategory"],
                "semantic_category": row["SemanticCategory"],
                "tags": row["Tags"],
            },
        )
