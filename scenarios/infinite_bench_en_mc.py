"""InfiniteBench En.MC (HELM Long Context, ``InfiniteBenchEnMCScenario``): a multiple-choice question about a
whole novel. Rows of ``longbook_choice_eng.jsonl`` (:mod:`helmflow.scenarios.infinite_bench`) whose novel, input
and options hold at most ``max_num_words`` words (131,072 on HELM's board); the options are the references, the
one equal to the row's single answer correct; split test. HELM's multiple-choice joint layout: instructions, the
novel and question, the lettered options, then the request again; no examples, 40 tokens, greedy. Scored by
exact match (the main metric) and HELM's exact-match family.
"""

from __future__ import annotations

from collections.abc import Iterator

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.infinite_bench import REPO, REVISION, InfiniteBenchParams, rows
from helmflow.scenarios.ruler_qa import words

FILE = "longbook_choice_eng.jsonl"
# helmflow's wording of HELM's instructions and the request after the options (a single letter, no period)
# (HELM's instructions end in a blank line and its spec sets no instance prefix; the layout adds the newline after
# instructions that HELM's format_instructions adds, so one is written here)
INSTRUCTIONS = ("Read the passage, then answer the question after it. Reply with the single letter of your choice "
                "and nothing else, without a period.\n")
OUTPUT_PREFIX = ("\nUsing the passage above, answer the question. Reply with the single letter of your choice and "
                 "nothing else, without a period.\n")


def en_mc_spec() -> AdapterSpec:
    """HELM's ``_get_long_context_multiple_choice_adapter_spec(max_tokens=40)``."""
    return AdapterSpec(method="multiple_choice_joint", global_prefix="", global_suffix="", instructions=INSTRUCTIONS,
                       input_prefix="", input_suffix="\n", reference_prefix="A. ", reference_suffix="\n",
                       output_prefix=OUTPUT_PREFIX, output_suffix="", instance_prefix="", max_train_instances=0,
                       generation=GenerationParams(max_tokens=40, temperature=0.0, stop=[], num_outputs=1))


@scenario("infinite_bench_en_mc")
class InfiniteBenchEnMC(Scenario[InfiniteBenchParams]):
    VERSION = "1"
    HUB_REPO = REPO
    HUB_REVISION = REVISION
    Params = InfiniteBenchParams
    description = "InfiniteBench En.MC: multiple-choice questions about a whole novel (HELM Long Context)."
    main_metric = "exact_match"
    metrics = ["exact_match", "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "efficiency"]
    default_adapter = en_mc_spec()
    helm_wording = ("the layout (instructions, the novel and question, lettered options, the request again), no "
                    "examples and 40 tokens follow HELM's run spec; the two sentences of instructions are "
                    "helmflow's wording of HELM's")

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=FILE, url=self.hub_url(FILE))]

    def load(self, files: dict[str, str]) -> Iterator[Instance]:
        url = files[FILE]
        for row in rows(self.name, url):
            size = words(row.context) + words(row.input) + sum(words(o) for o in row.options)
            if size > self.params.max_num_words:
                continue
            if len(row.answer) != 1:
                raise ScenarioError(f"scenario {self.name!r}: {url} row {row.id} has {len(row.answer)} answers; "
                                    "HELM's loader takes exactly one")
            yield Instance(id=str(row.id), split="test", input=Input(text=row.context + "\n\n" + row.input),
                           references=[Reference(text=o, correct=o == row.answer[0]) for o in row.options])
