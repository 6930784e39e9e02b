"""WikiFact (HELM's, from Wikidata relations): complete a fact about an entity, as HELM Classic runs it
(``wikifact_scenario.py``, run entries ``wikifact:k=5,subject=<relation>``, a targeted knowledge evaluation).

The source is HELM's: ``{train,dev,test}.jsonl`` of CodaLab bundle ``0x8c3b60eb…``, read in that order as train,
valid, test. A row is one (entity, relation) pair: ``property`` (a Wikidata property id), ``template`` (the
statement up to the object, e.g. "The author of X is") and ``result_names`` (nested lists of the objects' names).
A subject keeps the rows of its property, in file order (ids ``id<i>``); the input is the template, the
references every name (flattened, stripped), all correct. HELM's completion adapter: the template, a space and the
answer; five examples, 8 tokens, stop at a newline, **five outputs at temperature 1** (HELM's accuracy@k): the
main number is the first output's quasi-exact match, ``quasi_exact_match@k`` the best of the five. The ten
subjects are HELM's priority-2 relations. CodaLab publishes no checksum: the pins are recorded at first fetch.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, GenerationParams, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, ScenarioError, scenario
from helmflow.scenarios.base import read_jsonl_lines

BASE_URL = "https://worksheets.codalab.org/rest/bundles/0x8c3b60eb7c6b462e822a150f194d3b35/contents/blob"
FILES: dict[str, Split] = {"train.jsonl": "train", "dev.jsonl": "valid", "test.jsonl": "test"}  # HELM's order
# Wikidata's property ids of HELM Classic's priority-2 relations (run_entries.conf)
PROPERTIES = {"plaintiff": "P1620", "place_of_birth": "P19", "medical_condition_treated": "P2175",
              "instance_of": "P31", "part_of": "P361", "currency": "P38", "position_held": "P39", "author": "P50",
              "discoverer_or_inventor": "P61", "symptoms_and_signs": "P780"}
Subject = Literal["plaintiff", "place_of_birth", "medical_condition_treated", "instance_of", "part_of", "currency",
                  "position_held", "author", "discoverer_or_inventor", "symptoms_and_signs"]


class WikiFactParams(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: Subject


def flatten(names: Any) -> list[Any]:
    """HELM's ``flatten_list``: nested lists to one list, in order; a non-list is itself."""
    return [x for item in names for x in flatten(item)] if isinstance(names, list) else [names]


@scenario("wikifact")
class WikiFact(Scenario[WikiFactParams]):
    VERSION = "1"
    SOURCE_REVISION = "codalab-0x8c3b60eb"
    Params = WikiFactParams
    description = ("WikiFact: complete a Wikidata fact (HELM Classic's targeted knowledge evaluation; five outputs "
                   "at temperature 1).")
    main_metric = "quasi_exact_match"
    metrics = ["quasi_exact_match", "exact_match", "efficiency"]
    helm_wording = "HELM's completion adapter: the template, a space, the answer; five examples"
    helm_differences = ("wikifact: HELM's CodaLab files pinned by their sha256 (recorded at first fetch); the best "
                        "of the five outputs is quasi_exact_match@k (HELM names it quasi_exact_match@5)",)

    @property
    def default_adapter(self) -> AdapterSpec:
        """HELM's ``get_completion_adapter_spec(output_prefix=" ", output_suffix="\\n", max_train_instances=5,
        num_outputs=5, temperature=1.0, max_tokens=8, stop_sequences=["\\n"])``."""
        return AdapterSpec(method="generation", instructions="", input_prefix="", input_suffix="", output_prefix=" ",
                           output_suffix="\n", instance_prefix="\n", max_train_instances=5,
                           generation=GenerationParams(max_tokens=8, temperature=1.0, stop=["\n"], num_outputs=5))

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.web_url(f"{BASE_URL}/{name}"), sha256_unknown=True)
                for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        pid = PROPERTIES[self.params.subject]
        out: list[Instance] = []
        for name, split in FILES.items():
            url = files[name]
            for number, line in read_jsonl_lines(self.name, url):
                try:
                    row = json.loads(line)
                    if row["property"] != pid:
                        continue
                    template, names = row["template"], flatten(row["result_names"])
                    if not isinstance(template, str) or not all(isinstance(n, str) for n in names):
                        raise TypeError("template and result_names must be text")
                except (ValueError, KeyError, TypeError) as exc:
                    raise ScenarioError(f"scenario {self.name!r}: {url} line {number}: not WikiFact's shape "
                                        f"({type(exc).__name__}: {exc})") from None
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=template),
                                    references=[Reference(text=n.strip(), correct=True) for n in names]))
        return out
