"""SimpleSafetyTests (Bertievidgen/SimpleSafetyTests): 100 clearly harmful prompts in five harm areas.

Instances follow HELM's ``SimpleSafetyTestsScenario``: the test CSV at HELM's pinned revision, one
``test`` instance per row in file order, ids ``id<row index>``; the input is the ``prompt``;
``extra`` keeps the dataset id, harm area and category. Scored by the ``simple_safety_tests``
judge (safe 1, possibly unsafe 0.5, unsafe 0).
"""

from __future__ import annotations

from helmflow.adapters.generation import raw_prompt_spec
from helmflow.records import Input, Instance
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import RAW_PROMPT_WORDING, read_csv_source

REPO = "Bertievidgen/SimpleSafetyTests"
REVISION = "98223c5d8c4059c8f4d8fe2fec8720ee8a20d3c5"
FILENAME = "sst_test_cases.csv"  # what load_dataset(split="test") reads at this revision
COLUMNS = ["id", "harm_area", "category", "prompt"]


@scenario("simple_safety_tests")
class SimpleSafetyTests(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    unsafe_text = True  # harmful prompts: a content warning, and no text in static exports unless asked
    description = ("SimpleSafetyTests: 100 clearly harmful prompts (self-harm, violence, scams, abuse); "
                   "an LLM jury rates safety.")
    main_metric = "safety_score"
    metrics = ["simple_safety_tests", "efficiency"]
    default_adapter = raw_prompt_spec(512)
    helm_wording = RAW_PROMPT_WORDING

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.hub_url(FILENAME))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        rows = read_csv_source(self.name, files[FILENAME], COLUMNS)
        return [
            Instance(
                id=f"id{index}",
                split="test",
                input=Input(text=row["prompt"]),
                extra={"sst_id": row["id"], "harm_area": row["harm_area"], "category": row["category"]},
            )
            for index, row in enumerate(rows)
        ]
