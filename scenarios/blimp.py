"""BLiMP (Warstadt et al., 2020): minimal pairs of a grammatical and an ungrammatical sentence, as HELM Classic runs
them (``blimp_scenario.py``, run entries ``blimp:phenomenon=<phenomenon>``, a targeted language evaluation).

The source is HELM's: ``BLiMP.zip`` of ``alexwarstadt/blimp`` (branch ``master``), members
``data/<paradigm>.jsonl`` (the member path is [unverified]: HELM reads ``data/<paradigm>.jsonl`` under its unzip
folder). A phenomenon is its paradigms, in HELM's order (the four priority-2 phenomena here); each line
``{sentence_good, sentence_bad, ...}`` is a test instance in file order (ids ``id<i>``) with an empty input and the
two sentences as references, the good one correct. HELM's ``multiple_choice_separate_original`` with an empty
input: each sentence is scored alone by its log-probability (no instructions: HELM's separate adapter drops
them), the likelier one is the answer; exact match. Needs a deployment that returns the prompt's logprobs
(``echo``). GitHub publishes no checksum: the pins are recorded at first fetch.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_jsonl_lines

ZIP_URL = "https://github.com/alexwarstadt/blimp/blob/master/BLiMP.zip?raw=true"
# BLiMP's paradigms of HELM Classic's priority-2 phenomena, in HELM's order (which is the instances' order)
PARADIGMS: dict[str, list[str]] = {
    "irregular_forms": ["irregular_past_participle_verbs", "irregular_past_participle_adjectives"],
    "quantifiers": ["existential_there_quantifiers_1", "superlative_quantifiers_1", "superlative_quantifiers_2",
                    "existential_there_quantifiers_2"],
    "island_effects": ["left_branch_island_simple_question", "sentential_subject_island", "wh_island",
                       "coordinate_structure_constraint_object_extraction",
                       "coordinate_structure_constraint_complex_left_branch", "adjunct_island", "complex_NP_island",
                       "left_branch_island_echo_question"],
    "binding": ["principle_A_domain_2", "principle_A_domain_3", "principle_A_case_1", "principle_A_case_2",
                "principle_A_reconstruction", "principle_A_c_command", "principle_A_domain_1"],
}


class BLiMPParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    phenomenon: Literal["irregular_forms", "quantifiers", "island_effects", "binding"]


@scenario("blimp")
class BLiMP(Scenario[BLiMPParams]):
    VERSION = "1"
    SOURCE_REVISION = "blimp-master"
    Params = BLiMPParams
    description = ("BLiMP: which of two minimal-pair sentences is grammatical, by log-probability (HELM Classic's "
                   "targeted language evaluation; exact match).")
    main_metric = "exact_match"
    metrics = ["exact_match", "efficiency"]
    helm_wording = "HELM's separate multiple-choice adapter with an empty input: each sentence scored alone"
    helm_differences = ("blimp: HELM's zip of alexwarstadt/blimp (branch master), pinned by the sha256 of each file "
                        "read (recorded at first fetch)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        """HELM's ``get_multiple_choice_separate_adapter_spec(method, empty_input=True)``."""
        return AdapterSpec(method="multiple_choice_separate_original", instructions="", input_prefix="",
                           input_suffix="", max_train_instances=0,
                           generation=GenerationParams(max_tokens=1, temperature=0.0, stop=[], num_outputs=1))

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=f"{p}.jsonl", url=self.archive_url(ZIP_URL, f"data/{p}.jsonl", kind="zip"),
                           sha256_unknown=True) for p in PARADIGMS[self.params.phenomenon]]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for paradigm in PARADIGMS[self.params.phenomenon]:
            url = files[f"{paradigm}.jsonl"]
            for number, line in read_jsonl_lines(self.name, url):
                try:
                    row = json.loads(line)
                    good, bad = row["sentence_good"], row["sentence_bad"]
                    if not (isinstance(good, str) and isinstance(bad, str)):
                        raise TypeError("sentence_good and sentence_bad must be text")
                except (ValueError, KeyError, TypeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: not BLiMP's shape "
                                        f"({type(exc).__name__}: {exc})") from None
                references = [Reference(text=good, correct=True), Reference(text=bad, correct=False)]
                out.append(Instance(id=f"id{len(out)}", split="test", input=Input(text=""), references=references))
        return out
