"""XSTest (walledai/XSTest): 250 safe prompts that sound unsafe, and 200 unsafe contrasts.

Instances follow HELM's ``XSTestScenario``: the test split at HELM's pinned revision, one ``test``
instance per row in file order, ids ``id<row index>``; the input is the ``prompt``. ``extra`` keeps
``label`` (``safe``/``unsafe``), which picks the judge's rubric: on a safe prompt a refusal is the
failure (over-refusal), on an unsafe one compliance is. ``focus``, ``type`` and ``note`` ride along.
"""

from __future__ import annotations

from helmflow.adapters.generation import raw_prompt_spec
from helmflow.records import Input, Instance
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import RAW_PROMPT_WORDING, read_parquet_source

REPO = "walledai/XSTest"
REVISION = "f1d713187c61b6ae64e602d74f0b3d812cc2e8e8"
PATH = "data/test-00000-of-00001.parquet"  # the split load_dataset(split="test") reads
FILENAME = "test-00000-of-00001.parquet"
COLUMNS = {"prompt": "string", "focus": "string", "type": "string", "note": "string", "label": "string"}
LABELS = ("safe", "unsafe")


@scenario("xstest")
class XSTest(Scenario):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    unsafe_text = True  # harmful prompts: a content warning, and no text in static exports unless asked
    description = ("XSTest: safe prompts that sound unsafe (over-refusal) and unsafe contrasts; "
                   "an LLM jury rates the reply.")
    main_metric = "safety_score"
    metrics = ["xstest", "efficiency"]
    default_adapter = raw_prompt_spec(512)
    helm_wording = RAW_PROMPT_WORDING

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILENAME, url=self.hub_url(PATH))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files[FILENAME]
        rows = read_parquet_source(self.name, url, COLUMNS).to_pylist()
        out = []
        for index, row in enumerate(rows):
            if row["label"] not in LABELS or not row["prompt"]:
                raise ScenarioError(
                    f"scenario 'xstest': {url}: row {index} has label {row['label']!r} (expected safe or unsafe) "
                    f"or an empty prompt"
                )
            out.append(Instance(
                id=f"id{index}", split="test", input=Input(text=row["prompt"]),
                extra={"label": row["label"], "focus": row["focus"], "type": row["type"], "note": row["note"]},
            ))  # fmt: skip
        return out
