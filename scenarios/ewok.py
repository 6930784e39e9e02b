"""EWoK, Elements of World Knowledge (Ivanova et al., 2024): minimal pairs of contexts and targets, as HELM's
EWoK board runs them (``ewok_scenario.py``, run spec ``get_ewok_spec`` in ``experimental_run_specs.py``).

The source is the Hub dataset ``ewok-core/ewok-core-1.0`` at HELM's revision ``34d912a6…``, split test
(``Domain``, ``Context1``, ``Context2``, ``Target1``, ``Target2``). The repository is gated: accept its terms on
its Hub page and export ``HF_TOKEN`` (or point a mirror at the file); without them, the run stops with one
line saying so. Each row gives two instances, one per target: the input is the target, the references are the
two contexts, the matching one correct; ids ``id<n>`` count every row's targets before the ``domain`` filter
(HELM's rule, so an item's ids do not depend on the domain). Two in-context examples of ours follow as train
instances (HELM writes two of its own). Multiple choice joint with the contexts numbered ``1``/``2``, two
tokens, scored by exact match (the main metric).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_parquet_source

REPO = "ewok-core/ewok-core-1.0"
REVISION = "34d912a608066c92e2990a0328ffc3bd9a716042"
PATH = "data/test-00000-of-00001.parquet"
DOMAINS = ("agent_properties", "material_dynamics", "material_properties", "physical_dynamics",
           "physical_interactions", "physical_relations", "quantitative_properties", "social_interactions",
           "social_properties", "social_relations", "spatial_relations")
Domain = Literal["all", "agent_properties", "material_dynamics", "material_properties", "physical_dynamics",
                 "physical_interactions", "physical_relations", "quantitative_properties", "social_interactions",
                 "social_properties", "social_relations", "spatial_relations"]
COLUMNS = {name: "string" for name in ("Domain", "Context1", "Context2", "Target1", "Target2")}
# our two in-context examples (target, contexts, the right one's index), in HELM's shape
EXAMPLES = (("She poured water from the jug.", ("The jug is empty.", "The jug holds water."), 1),
            ("The dog wagged its tail at the visitor.", ("The dog is friendly.", "The dog is afraid."), 0))
# our wording of HELM's instructions and task line; the headings and quoting are HELM's layout
INSTRUCTIONS = ("# INSTRUCTIONS\n\nEach example below gives a scenario and two numbered contexts. Read them and pick "
                "the context under which the scenario makes more sense. Answer with \"1\" or \"2\" only.\n")
INPUT_PREFIX = "# TEST EXAMPLE\n\n## Scenario\n\""
INPUT_SUFFIX = "\"\n\n## Contexts\n"
OUTPUT_PREFIX = "\n## Task\nWhich context fits the scenario better? Answer \"1\" or \"2\".\n\n## Response\n"


class EwokParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    domain: Domain = "all"


def ewok_spec() -> AdapterSpec:
    """HELM's ``get_ewok_spec``: multiple choice joint, options ``1. "context"``, two examples, 2 tokens, stop at
    a blank line, greedy."""
    return AdapterSpec(
        method="multiple_choice_joint", instructions=INSTRUCTIONS, input_prefix=INPUT_PREFIX, input_suffix=INPUT_SUFFIX,
        reference_prefix='1. "', reference_suffix='"\n', output_prefix=OUTPUT_PREFIX, output_suffix="\n",
        instance_prefix="\n", max_train_instances=2,
        generation=GenerationParams(max_tokens=2, temperature=0.0, stop=["\n\n"], num_outputs=1),
    )


@scenario("ewok")
class EWoK(Scenario[EwokParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = EwokParams
    description = "EWoK: which of two minimally different contexts a target sentence fits (world knowledge)."
    gated = f"the Hub repository {REPO} is gated: its terms are accepted on its page, never passed on"
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "efficiency"]
    default_adapter = ewok_spec()
    helm_wording = ("the headings, the quoted scenario, the numbered quoted contexts, two in-context examples and 2 "
                    "tokens follow HELM's run spec; the instructions, the task line and the two examples are "
                    "helmflow's own")
    helm_differences = ("ewok: the two in-context examples are helmflow's own sentences (HELM's scenario writes two of "
                        "its own)",)
    pin_unverified = f"the file's path in the repository ({PATH}) was not checked against the gated Hub repository"

    def sources(self) -> list[DataSource]:
        return [DataSource(filename="test.parquet", url=self.hub_url(PATH))]

    def load(self, files: dict[str, str]) -> list[Instance]:
        url = files["test.parquet"]
        wanted = self.params.domain.replace("_", "-")
        out: list[Instance] = []
        n = 0
        for number, row in enumerate(read_parquet_source(self.name, url, COLUMNS).to_pylist()):
            contexts = [row["Context1"], row["Context2"]]
            if None in contexts or row["Target1"] is None or row["Target2"] is None:
                raise ScenarioError(f"scenario {self.name!r}: {url} row {number} lacks a context or a target")
            for index, target in enumerate((row["Target1"], row["Target2"])):
                if wanted == "all" or row["Domain"] == wanted:
                    references = [Reference(text=c, correct=i == index) for i, c in enumerate(contexts)]
                    out.append(Instance(id=f"id{n}", split="test", input=Input(text=target), references=references))
                n += 1
        for target, pair, right in EXAMPLES:
            out.append(Instance(id=f"id{n}", split="train", input=Input(text=target),
                                references=[Reference(text=c, correct=i == right) for i, c in enumerate(pair)]))
            n += 1
        return out
