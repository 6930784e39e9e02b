"""LegalSupport (HELM's own dataset, Neel Guha): which of two case summaries most directly supports a legal claim?
As HELM Classic runs it (``legal_support_scenario.py``, run entry ``legal_support``, a targeted reasoning
evaluation).

The source is HELM's: the zip HELM downloads from Google Drive (file id ``1PVoyddr…``), members
``legal_support/{train,dev,test}.jsonl`` (train, valid, test, read in that order; rows in file order, ids
``id<i>``). A row ``{context, citation_a: {parenthetical}, citation_b: {parenthetical}, label: "a"|"b"}``: the input
is the context, the references the two parentheticals in order, the correct one the ``label``'s (HELM marks every
reference whose text equals it, so two equal parentheticals are both correct). HELM's multiple-choice adapter:
``Which statement best supports the passage?``, ``Passage:`` / lettered options / ``Answer:``, three in-context
examples (the texts are long); quasi-exact match (HELM's main metric). Google publishes no checksum: the pin
is recorded at first fetch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

from helmflow.records import AdapterSpec, Input, Instance, Reference, Split
from helmflow.scenarios import DataSource, Scenario, scenario
from helmflow.scenarios.base import NoParams, parse_jsonl_row, read_jsonl_lines
from helmflow.scenarios.helm_lite import multiple_choice_spec

URL = "https://docs.google.com/uc?export=download&id=1PVoyddrCHChMxYrLhsI-zu7Xzs5S8N77"
FILES: dict[str, Split] = {"train.jsonl": "train", "dev.jsonl": "valid", "test.jsonl": "test"}  # HELM's order


class Citation(BaseModel):
    model_config = ConfigDict(extra="allow")
    parenthetical: str


class Row(BaseModel):
    model_config = ConfigDict(extra="allow")
    context: str
    citation_a: Citation
    citation_b: Citation
    label: Literal["a", "b"]


@scenario("legal_support")
class LegalSupport(Scenario[NoParams]):
    VERSION = "1"
    SOURCE_REVISION = "gdrive-1PVoyddr"
    Params = NoParams
    description = ("LegalSupport: which of two case summaries best supports a legal claim (HELM Classic's targeted "
                   "reasoning evaluation; quasi-exact match).")
    main_metric = "quasi_exact_match"  # HELM's metadata (its metric specs compute both)
    metrics = ["quasi_exact_match", "exact_match", "calibration", "efficiency"]
    helm_wording = ("HELM's multiple-choice adapter: its instructions sentence, Passage:, lettered options and "
                    "Answer:, three in-context examples")
    helm_differences = ("legal_support: HELM's Google Drive zip, pinned by its sha256 (recorded at first fetch: "
                        "Google publishes none); one output token and no top-5 logprobs, as the board's other "
                        "multiple-choice entries",)

    @property
    def default_adapter(self) -> AdapterSpec:
        return multiple_choice_spec("").model_copy(update={
            "instructions": "Which statement best supports the passage?", "input_prefix": "Passage: ",
            "max_train_instances": 3})

    def sources(self) -> list[DataSource]:
        return [DataSource(filename=name, url=self.archive_url(URL, f"legal_support/{name}", kind="zip"),
                           sha256_unknown=True) for name in FILES]

    def load(self, files: dict[str, str]) -> list[Instance]:
        out: list[Instance] = []
        for name, split in FILES.items():
            url = files[name]
            for number, line in read_jsonl_lines(self.name, url):
                row = parse_jsonl_row(f"scenario {self.name!r}: {url} line {number}", line, Row)
                answers = [row.citation_a.parenthetical, row.citation_b.parenthetical]
                correct = answers[0] if row.label == "a" else answers[1]
                out.append(Instance(id=f"id{len(out)}", split=split, input=Input(text=row.context),
                                    references=[Reference(text=a, correct=a == correct) for a in answers]))
        return out
